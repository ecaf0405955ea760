"""What JAX's counters mean for status, ``fit`` and the outcome of a cell. Its peak counts from the
process's start and cannot be reset; an out-of-memory error is an XLA runtime error whose text says
``RESOURCE_EXHAUSTED``."""

from __future__ import annotations

from ...base import AllocatorSource

PEAK_NOTE = (
    "per-cell peaks exact when a cell sets a new high, else sampled (≥): JAX's peak can't be reset"
)


def peak_note(source: AllocatorSource, peak_mode: str) -> str:
    return PEAK_NOTE


def why_sampled(peak_mode: str) -> str:
    return (
        "JAX's peak counter is this process's high-water mark and cannot be reset, so a "
        "size's peak is exact only when it beats every earlier peak: run larger sizes, or "
        "fit in a fresh kernel"
    )
