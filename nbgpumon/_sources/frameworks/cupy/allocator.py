"""CuPy's default memory pool: this kernel's view of the GPU memory CuPy holds.

Never imports cupy and never creates a CUDA context. CuPy's pool answers for the current
device, and making device N current creates its context; so device N is read only while the
driver says N's context is already up (:mod:`.cuda_contexts`). ``used_bytes()`` is what live
arrays hold, ``total_bytes()`` what the pool holds from the driver (the cache that
``free_all_blocks()`` gives back), ``get_limit()`` its cap (0: none).

CuPy keeps no peak, so by default a cell's CuPy peak is the highest used bytes sampled (a
``≥`` bound). Its memory hooks can keep one, at about 2.3–2.6 µs per allocation (as much again as
a pooled allocation costs, measured on an H200), so that is opt-in (``hook_wanted``, from
``GPUMon.cupy_peak_hook``). Hooks are thread-local: :class:`PeakHook` is armed on the thread
that runs cells and, after each allocation there, reads the pool's used bytes, so a cell's
peak is exact for what that thread allocated; allocations on other threads are seen only by
the sampler.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any

from ...base import AllocatorStats
from ...cuda_contexts import CudaContexts
from .metrics import LABEL, METRICS


class CupyAllocatorSource:
    """Reads CuPy's default pools on devices whose context is already up."""

    name = "cupy"
    label = LABEL
    metrics = METRICS

    def __init__(self, contexts: CudaContexts | None = None, max_devices: int = 64) -> None:
        self.status = "cupy not imported"
        self._contexts = contexts if contexts is not None else CudaContexts()
        self._max_devices = max_devices  # the NVML device count: no CUDA call to count them
        self.hook_wanted = False  # GPUMon.cupy_peak_hook: arm the hook at the next cell
        self._hook: Any = None  # the PeakHook, once armed on the cells' thread
        self._hook_thread: threading.Thread | None = None

    @property
    def peak_resettable(self) -> bool:
        return self._hook is not None  # exact per-cell peaks need the armed hook

    def _cupy(self) -> Any | None:
        cupy = sys.modules.get("cupy")
        if cupy is None:
            self.status = "cupy not imported"
        return cupy

    def _devices(self) -> list[int]:
        return [i for i in range(self._max_devices) if self._contexts.active(i)]

    def active(self) -> bool:
        """True once cupy is imported and some device has a CUDA context to read."""
        if self._cupy() is None:
            return False
        if not self._devices():
            self.status = "cupy imported, no CUDA context in this kernel yet (not read)"
            return False
        return True

    def device_uuids(self) -> list[str]:
        return []  # CuPy's numbering is CUDA's: the mapping comes from CUDA_VISIBLE_DEVICES

    def read(self, cuda_index: int) -> AllocatorStats | None:
        cupy = self._cupy()
        if cupy is None or not self._contexts.active(cuda_index):
            return None
        try:
            pool = cupy.get_default_memory_pool()
            with cupy.cuda.Device(cuda_index):  # its context is up: this makes none
                used, total, limit = pool.used_bytes(), pool.total_bytes(), pool.get_limit()
        except Exception as exc:
            self.status = f"cupy memory pool unreadable: {exc}"
            return None
        self.status = "ok"
        hook = self._hook
        peak = hook.peak.get(cuda_index) if hook is not None else None
        return AllocatorStats(
            allocated=int(used),
            reserved=int(total),
            peak_allocated=None if peak is None else max(int(peak), int(used)),
            allocated_total=None,
            limit=int(limit) or None,
        )

    def watch_thread(self) -> None:
        """Arm the peak hook on the calling thread (the one that runs cells), once."""
        cupy = sys.modules.get("cupy")
        if cupy is None or self._hook is not None or not self.hook_wanted:
            return
        try:
            self._hook = PeakHook.make(cupy)
            self._hook_thread = threading.current_thread()
        except Exception as exc:  # a CuPy without memory hooks: sampled peaks
            self._hook = None
            self.status = f"cupy memory hook unavailable ({exc}): peaks are sampled"

    def reset_peak(self, cuda_index: int) -> bool:
        hook = self._hook
        if hook is None or threading.current_thread() is not self._hook_thread:
            return False
        stats = self.read(cuda_index)
        hook.peak[cuda_index] = stats.allocated if stats is not None else 0
        return True

    def timeline_values(self, stats: AllocatorStats) -> list[float | None]:
        return [stats.metric_value(m.name) for m in self.metrics]

    def release_cache(self) -> None:
        """Calls ``free_all_blocks()`` on each device's pool and on the pinned host pool."""
        cupy = self._cupy()
        if cupy is None:
            return
        try:
            pool = cupy.get_default_memory_pool()
            for index in self._devices():
                with cupy.cuda.Device(index):
                    pool.free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        except Exception as exc:
            self.status = f"cupy free_all_blocks failed: {exc}"

    def close(self) -> None:
        """Disarm the hook (on its thread; elsewhere it stays, harmless, until the thread
        ends)."""
        hook, self._hook = self._hook, None
        if hook is not None and threading.current_thread() is self._hook_thread:
            with contextlib.suppress(Exception):
                hook.__exit__(None, None, None)


class PeakHook:
    """Builds CuPy's memory hook that keeps the pool's high-water mark per device."""

    @staticmethod
    def make(cupy: Any) -> Any:
        base = cupy.cuda.MemoryHook
        pool = cupy.get_default_memory_pool()

        class _Peak(base):  # type: ignore[misc, valid-type]
            name = "nbgpumon_peak"

            def __init__(self) -> None:
                self.peak: dict[int, int] = {}

            def malloc_postprocess(self, device_id: int, mem_size: int = 0, **_: Any) -> None:
                # the pool's own count, not a running sum: frees on other threads can't skew it
                used = pool.used_bytes()
                if used > self.peak.get(device_id, 0):
                    self.peak[device_id] = used

        hook = _Peak()
        hook.__enter__()
        return hook
