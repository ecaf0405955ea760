"""PyTorch's CUDA caching allocator: this kernel's own view of its GPU memory.

Never imports torch and never creates a CUDA context: every read first checks that the user
already imported torch and that CUDA is already initialised, and passes device indices
explicitly (``current_device()``, ``mem_get_info()`` and friends would create a context).
"""

from __future__ import annotations

import sys
from typing import Any

from ...base import AllocatorStats
from .metrics import LABEL, METRICS


def initialised_cuda() -> Any | None:
    """``torch.cuda`` when the user imported torch and CUDA is up, else None. Never imports
    torch and never initialises CUDA: what every caller of a CUDA function checks first."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        return cuda if cuda is not None and cuda.is_initialized() else None
    except Exception:
        return None


class TorchAllocatorSource:
    """Reads ``torch.cuda`` allocator stats when, and only when, CUDA is already up."""

    name = "torch"
    label = LABEL
    metrics = METRICS
    peak_resettable = True  # torch.cuda.reset_peak_memory_stats

    def __init__(self) -> None:
        self.status = "torch not imported"
        # torch's C calls behind memory_stats_as_nested_dict and reset_peak_memory_stats, found
        # once CUDA is up: called at every cell's edges, their Python wrappers (a device
        # lookup each) cost as much as the calls
        self._c_calls: tuple[Any, Any] | None = None

    def _cuda(self) -> Any | None:
        torch = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None) if torch is not None else None
        if cuda is None:
            self.status = "torch not imported"
            return None
        try:
            if not cuda.is_initialized():
                self.status = "CUDA not initialised by this kernel yet"
                return None
        except Exception as exc:
            self.status = f"torch.cuda unusable: {exc}"
            return None
        return cuda

    def active(self) -> bool:
        """True when torch is imported and has initialised CUDA in this process."""
        return self._cuda() is not None

    def device_uuids(self) -> list[str]:
        """UUIDs of torch's CUDA devices in CUDA order, or [] when unknown."""
        cuda = self._cuda()
        if cuda is None:
            return []
        try:
            return [str(cuda.get_device_properties(i).uuid) for i in range(cuda.device_count())]
        except Exception:
            return []  # older torch has no uuid property: fall back to CUDA_VISIBLE_DEVICES

    def read(self, cuda_index: int) -> AllocatorStats | None:
        """Counters for one CUDA device, or None when unavailable."""
        cuda = self._cuda()
        if cuda is None:
            return None
        try:
            # The nested dict skips the Python flattening that makes memory_stats() slow.
            stats = self._calls(cuda)[0](cuda_index)
        except Exception as exc:
            self.status = f"torch.cuda memory stats failed: {exc}"
            return None
        self.status = "ok"
        if not stats:
            return None
        try:  # (indexed in place: a cell's edge pays no call a counter)
            allocated, active = stats["allocated_bytes"]["all"], stats["active_bytes"]["all"]
            return AllocatorStats(
                allocated=int(allocated["current"]),
                reserved=int(stats["reserved_bytes"]["all"]["current"]),
                peak_allocated=int(allocated["peak"]),
                allocated_total=int(allocated["allocated"]),
                alloc_retries=int(stats.get("num_alloc_retries", 0)),
                ooms=int(stats.get("num_ooms", 0)),
                active=int(active["current"]),
                inactive_split=int(stats["inactive_split_bytes"]["all"]["current"]),
            )
        except (KeyError, TypeError, ValueError):  # a torch that names its counters otherwise
            pass
        return AllocatorStats(
            allocated=_all(stats, "allocated_bytes", "current"),
            reserved=_all(stats, "reserved_bytes", "current"),
            peak_allocated=_all(stats, "allocated_bytes", "peak"),
            allocated_total=_all(stats, "allocated_bytes", "allocated"),
            alloc_retries=int(stats.get("num_alloc_retries", 0)),
            ooms=int(stats.get("num_ooms", 0)),
            active=_all(stats, "active_bytes", "current"),
            inactive_split=_all(stats, "inactive_split_bytes", "current"),
        )

    def timeline_values(self, stats: AllocatorStats) -> list[float | None]:
        """The counters the timeline keeps (reserved, allocated, active, inactive_split, peak)."""
        return [stats.metric_value(m.name) for m in self.metrics]

    def reset_peak(self, cuda_index: int) -> bool:
        """Restart torch's peak counters on one device; False when CUDA is not up."""
        cuda = self._cuda()
        if cuda is None:
            return False
        try:
            self._calls(cuda)[1](cuda_index)
            return True
        except Exception as exc:
            self.status = f"torch.cuda.reset_peak_memory_stats failed: {exc}"
            return False

    def _calls(self, cuda: Any) -> tuple[Any, Any]:
        """(memory stats as a nested dict, reset peaks) for a device index: torch's C calls
        where this torch has them (each of its wrappers passes an index on as it is), else
        the wrappers."""
        calls = self._c_calls
        if calls is None:
            native = getattr(sys.modules.get("torch"), "_C", None)
            stats = getattr(native, "_cuda_memoryStats", None)
            reset = getattr(native, "_cuda_resetPeakMemoryStats", None)
            if stats is None or reset is None:
                stats = cuda.memory.memory_stats_as_nested_dict
                reset = cuda.reset_peak_memory_stats
            calls = self._c_calls = (stats, reset)
        return calls

    def memory_cap(self, cuda_index: int) -> int | None:
        """The bytes torch may reserve on one device under
        ``torch.cuda.set_per_process_memory_fraction``. None when no fraction below 1 is set, CUDA
        is not up, or this torch cannot say (``get_per_process_memory_fraction`` came in torch
        2.6)."""
        cuda = self._cuda()
        getter = getattr(getattr(cuda, "memory", None), "get_per_process_memory_fraction", None)
        if cuda is None or getter is None:
            return None
        try:
            fraction = float(getter(cuda_index))
            total = int(cuda.get_device_properties(cuda_index).total_memory)
        except Exception:
            return None
        # The allocator's cap is the fraction of cudaMemGetInfo's total, which is the
        # device's total memory as its properties give it.
        return int(fraction * total) if 0 <= fraction < 1 else None

    def watch_thread(self) -> None:
        """No thread-local hooks to arm."""

    def release_cache(self) -> None:
        """Give torch's cached, unused blocks back to the driver (only once CUDA is up)."""
        cuda = initialised_cuda()  # empty_cache must never be the first CUDA call
        if cuda is not None:
            try:
                cuda.empty_cache()
            except Exception as exc:
                self.status = f"torch.cuda.empty_cache failed: {exc}"


def _all(stats: dict, name: str, field: str) -> int:
    try:
        return int(stats[name]["all"][field])
    except (KeyError, TypeError, ValueError):
        return 0
