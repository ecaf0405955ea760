"""What a framework plug-in with an operator profiler gives ``%%gpumon profile``: one cell run
under it, summarised as data (the session runs the cell; a view draws the result)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ProfiledCell:
    """The top operators of one profiled cell, by memory they allocated (bytes).

    ``rows`` holds one dict per operator, in ``table``'s order: ``name``, ``calls``,
    ``self_cuda_memory``, ``cuda_memory``, ``self_cpu_memory``, ``cpu_memory`` (bytes; "self"
    leaves out what the operators it called allocated; frees count negative) and
    ``self_cuda_time_us``, ``cuda_time_us`` (microseconds; ``None`` when CUDA was not
    profiled).
    """

    table: str  # the framework's own table, as text
    rows: list[dict]
    sort_by: str  # the key the table is sorted by
    note: str  # what was not profiled, and why ("" for nothing)


class CellProfiler(Protocol):
    """One framework's profiler."""

    def profile(self, run: Callable[[], bool], top: int) -> ProfiledCell:
        """Call ``run`` (the cell; False when it raised) under the profiler and return its
        top ``top`` operators. Raises UsageError when the profiler cannot run."""
        ...
