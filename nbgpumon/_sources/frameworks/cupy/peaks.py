"""What CuPy's pool means for status, ``fit`` and the outcome of a cell. Its peaks are exact only
with the memory hook (``GPUMon.cupy_peak_hook``, a setting of this plug-in's own, or armed for the
length of a ``fit``), and its out-of-memory error is a ``MemoryError`` of the GPU, not of the
host."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...base import AllocatorSource
from ..plugin import Setting


def peak_note(source: AllocatorSource, peak_mode: str) -> str:
    if not source.peak_resettable:  # no hook armed
        return (
            "per-cell peaks sampled (≥); %config GPUMon.cupy_peak_hook = True makes them "
            "exact (about 2.3-2.6 µs per CuPy allocation)"
        )
    return "per-cell peaks exact for the kernel's thread (CuPy memory hook), else sampled (≥)"


def why_sampled(peak_mode: str) -> str:
    return "CuPy's memory hook could not be armed (see %gpumon status)"


@contextlib.contextmanager
def hook_armed(source: AllocatorSource) -> Iterator[None]:
    """The memory hook armed on this thread for the block, if CuPy is imported and the hook is
    not armed already; disarmed after, as it was. It costs about 2.5 µs a CuPy allocation,
    paid only while ``fit`` runs."""
    cupy: Any = source
    if cupy.peak_resettable:  # armed already, for every cell
        yield
        return
    wanted, cupy.hook_wanted = cupy.hook_wanted, True
    cupy.watch_thread()  # nothing while CuPy is not imported; arming needs no CUDA context
    try:
        yield
    finally:
        if cupy.peak_resettable:
            cupy.close()
        cupy.hook_wanted = wanted


def _peak_hook_set(source: AllocatorSource, on: bool) -> None:
    cupy: Any = source
    cupy.hook_wanted = on  # armed when the next cell begins
    if not on:
        cupy.close()


PEAK_HOOK = Setting(
    "cupy_peak_hook",
    False,
    help="Exact per-cell CuPy peaks from a CuPy memory hook on the kernel's thread; it "
    "costs about 2.3-2.6 µs per CuPy allocation (measured on an H200), which doubles the cost "
    "of a pooled allocation. Off: CuPy peaks are sampled lower bounds (≥).",
    apply=_peak_hook_set,
)
