"""torch's profiler around one cell: the operators that took memory.

Facts this module relies on (read from torch 2.13's sources; the 2.11 ``_build_table`` is the
same):

- ``profile_memory=True`` records every allocation the framework allocators report on the
  profiling thread, whatever the activities: the CUDA caching allocator reports each block to
  the profiler's thread-local state, which checks only ``profile_memory``. So a cell that first
  initialises CUDA under a CPU-only profile still gets its CUDA memory attributed to operators;
  only CUDA kernel times are missing.
- A profiler with the CUDA activity calls ``torch.cuda.synchronize()`` when it stops, and that
  initialises CUDA. So the CUDA activity is only turned on when CUDA was already up.
- ``EventList.table(sort_by=...)`` maps ``cuda`` to ``device`` in the key, so
  ``self_cuda_memory_usage`` sorts by ``FunctionEventAvg.self_device_memory_usage``.
- The table draws CUDA memory columns only for a profiler whose ``use_device`` is ``"cuda"``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ...._foundation.errors import UsageError
from ...._foundation.native_stderr import native_stderr_without
from ..cell_profiler import ProfiledCell

# Attribute names on torch's FunctionEventAvg, newest first: torch renamed cuda_* to device_*.
_SELF_DEVICE_MEM = ("self_device_memory_usage", "self_cuda_memory_usage")
_DEVICE_MEM = ("device_memory_usage", "cuda_memory_usage")
_SELF_DEVICE_TIME = ("self_device_time_total", "self_cuda_time_total")
_DEVICE_TIME = ("device_time_total", "cuda_time_total")

# What torch's Kineto writes to stderr at every profiler start and stop ("USDT:… profiler_start"),
# at a level that no setting silences without its errors too (libkineto's Logger.h): dropped.
KINETO_MARKERS = "USDT:"

# sort_by keys for EventList.table, tried in order: the documented name, then the new one.
_CUDA_SORT = ("self_cuda_memory_usage", "self_device_memory_usage")
_CPU_SORT = ("self_cpu_memory_usage",)


class TorchCellProfiler:
    """``torch.profiler.profile`` with memory, CUDA activity only when CUDA was up before."""

    def profile(self, run: Callable[[], bool], top: int) -> ProfiledCell:
        # The one place nbgpumon imports torch: %%gpumon profile asks for torch's profiler by
        # name, and it never initialises CUDA (see above).
        try:
            import torch
        except ImportError:
            raise UsageError("profiling a cell needs torch: pip install torch") from None

        cuda_before = torch.cuda.is_initialized()
        prof = _profiler(torch, cuda_before)
        try:
            with native_stderr_without(KINETO_MARKERS):
                prof.__enter__()  # (a context manager, whose block is the cell: run below)
        except RuntimeError as exc:  # another profiler already runs on this thread
            raise UsageError(f"torch's profiler could not start: {exc}") from None
        try:
            failed = not run()
        finally:
            with native_stderr_without(KINETO_MARKERS):
                prof.__exit__(None, None, None)
        try:
            table, rows, sort_by = _summarise(prof.key_averages(), top, cuda_profiled=cuda_before)
        finally:
            # if summarising raises, the traceback IPython keeps holds this frame: drop the
            # profiler (and all its events) first
            del prof
        return ProfiledCell(table, rows, sort_by, _note(torch, cuda_before, failed))


def _profiler(torch: Any, cuda: bool) -> Any:
    """torch's profiler of memory, with shapes, CPU activity and CUDA's when ``cuda``.

    ``torch.profiler.profile`` asks at its start whether ``torch._inductor`` exists (for its
    care of CUDA graphs), and torch's lazy attribute answers by importing inductor and dynamo:
    1.4 s, most of a trivial cell's profile. So unless the user's code loaded inductor (then
    the question is free and that care may be wanted), this uses the profiler it wraps,
    ``torch.autograd.profiler.profile``, with the same settings: the same events and table.
    """
    if "torch._inductor" in sys.modules:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
        return profile(activities=activities, profile_memory=True, record_shapes=True)
    from torch.autograd.profiler import profile as autograd_profile

    return autograd_profile(
        use_device="cuda" if cuda else None,
        record_shapes=True,
        profile_memory=True,
        use_kineto=True,
    )


def _summarise(averages: Any, top: int, cuda_profiled: bool) -> tuple[str, list[dict], str]:
    """Torch's table and the same rows as data, sorted by CUDA memory when there is any."""
    cuda_memory = any(_field(e, _SELF_DEVICE_MEM) > 0 for e in averages)
    if cuda_memory and not cuda_profiled:
        # CUDA came up inside a CPU-only profile: the memory was recorded, but torch's table
        # shows CUDA memory columns only for a CUDA profiler.
        for evt in averages:
            evt.use_device = "cuda"
    keys = _CUDA_SORT if cuda_memory else _CPU_SORT
    table, sort_by = "", keys[0]
    for key in keys:
        try:
            table, sort_by = averages.table(sort_by=key, row_limit=top), key
            break
        except AttributeError:  # a torch without this attribute name: try the next
            continue
    order = _SELF_DEVICE_MEM if cuda_memory else ("self_cpu_memory_usage",)
    # sorted() is stable, as in torch's table, so ties come out in the same order there
    ranked = sorted(averages, key=lambda e: _field(e, order), reverse=True)[:top]
    return table, [_row(e, cuda_profiled) for e in ranked], sort_by


def _row(evt: Any, cuda_profiled: bool) -> dict:
    return {
        "name": str(evt.key),
        "calls": int(evt.count),
        "self_cuda_memory": int(_field(evt, _SELF_DEVICE_MEM)),
        "cuda_memory": int(_field(evt, _DEVICE_MEM)),
        "self_cpu_memory": int(evt.self_cpu_memory_usage),
        "cpu_memory": int(evt.cpu_memory_usage),
        "self_cuda_time_us": float(_field(evt, _SELF_DEVICE_TIME)) if cuda_profiled else None,
        "cuda_time_us": float(_field(evt, _DEVICE_TIME)) if cuda_profiled else None,
    }


def _field(evt: Any, names: tuple[str, ...]) -> float:
    for name in names:
        value = getattr(evt, name, None)
        if value is not None:
            return value
    return 0


def _note(torch: Any, cuda_before: bool, failed: bool) -> str:
    if cuda_before:
        note = ""
    elif torch.cuda.is_initialized():
        note = (
            "CUDA was first initialised by this cell: profiled CPU activity only (no CUDA "
            "kernel times); CUDA memory is what the allocator reported"
        )
    elif getattr(torch.version, "cuda", None) is None:
        note = "this torch has no CUDA (a CPU build): profiled CPU only"
    else:
        note = "CUDA was not initialised by this kernel before the cell: profiled CPU only"
    if failed:
        note = "; ".join(p for p in (note, "the cell raised: profiled up to the error") if p)
    return note
