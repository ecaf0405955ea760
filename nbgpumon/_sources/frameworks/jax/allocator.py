"""JAX's allocator (XLA's pool on each GPU): this kernel's view of the memory JAX holds.

Never imports jax and never initialises a backend. ``jax.devices()`` initialises every backend
and, by default, preallocates 75% of each GPU, so a read goes through JAX's own table of
backends that are already up (``jax._src.xla_bridge._backends``, read without its lock, which
the kernel's thread may hold for seconds while a backend starts). Until the user's code starts
the GPU backend, this source reads nothing.

``Device.memory_stats()`` gives ``bytes_in_use``, ``peak_bytes_in_use`` (since the process
started: JAX has no reset), ``pool_bytes`` or ``bytes_reserved`` (what its pool holds from the
driver), ``bytes_limit`` and ``largest_free_block_bytes``; it may return None.
"""

from __future__ import annotations

import sys
from typing import Any

from ...base import AllocatorStats
from .metrics import LABEL, METRICS

GPU_PLATFORMS = ("cuda", "rocm", "gpu")
_BRIDGE = "jax._src.xla_bridge"


def initialised_backends() -> dict[str, Any] | None:
    """JAX's initialised backends by platform ({} before the first computation), or None when
    jax is not imported or its table is not where this version of nbgpumon looks."""
    if "jax" not in sys.modules:
        return None
    backends = getattr(sys.modules.get(_BRIDGE), "_backends", None)
    return backends if isinstance(backends, dict) else None


class JaxAllocatorSource:
    """Reads ``memory_stats()`` of JAX's GPU devices once the user's code has started them."""

    name = "jax"
    label = LABEL
    metrics = METRICS
    peak_resettable = False  # peak_bytes_in_use counts from the process's start

    def __init__(self) -> None:
        self.status = "jax not imported"
        self._clients: tuple[int, ...] = ()  # ids of the backends the device table came from
        self._devices: dict[int, Any] = {}  # CUDA index -> jax Device

    def _gpu_devices(self) -> dict[int, Any]:
        backends = initialised_backends()
        if backends is None:
            in_modules = "jax" in sys.modules
            self.status = (
                "jax imported, but its backend table is not readable (a jax this nbgpumon "
                "does not know): not read"
                if in_modules
                else "jax not imported"
            )
            return {}
        if not backends:
            self.status = "jax imported, no backend initialised yet (not read)"
            return {}
        try:
            clients = [(p, c) for p, c in list(backends.items()) if p in GPU_PLATFORMS]
            key = tuple(id(c) for _, c in clients)
            if key != self._clients:  # first read, or jax.clear_backends() made new ones
                self._devices = {
                    int(d.local_hardware_id): d
                    for _, client in clients
                    for d in client.local_devices()
                    if getattr(d, "local_hardware_id", None) is not None
                }
                self._clients = key
        except Exception as exc:
            self.status = f"jax's devices unreadable: {exc}"
            return {}
        if not self._devices:
            platforms = ", ".join(sorted(backends))
            self.status = f"jax active on {platforms} only: no GPU backend to read"
        return self._devices

    def active(self) -> bool:
        """True once jax is imported and its GPU backend is up."""
        return bool(self._gpu_devices())

    def device_uuids(self) -> list[str]:
        return []  # JAX names no UUID: the mapping comes from CUDA_VISIBLE_DEVICES

    def read(self, cuda_index: int) -> AllocatorStats | None:
        device = self._gpu_devices().get(cuda_index)
        if device is None:
            return None
        try:
            stats = device.memory_stats()
        except Exception as exc:
            self.status = f"jax memory_stats() failed: {exc}"
            return None
        if not isinstance(stats, dict):
            self.status = "jax's memory_stats() returned nothing for its GPU (not read)"
            return None
        self.status = "ok"
        in_use = _int(stats, "bytes_in_use") or 0
        return AllocatorStats(
            allocated=in_use,
            reserved=_int(stats, "pool_bytes") or _int(stats, "bytes_reserved") or in_use,
            peak_allocated=_int(stats, "peak_bytes_in_use"),
            allocated_total=None,
            limit=_int(stats, "bytes_limit"),
            largest_free=_int(stats, "largest_free_block_bytes"),
        )

    def reset_peak(self, cuda_index: int) -> bool:
        return False  # JAX's peak can't be reset: a cell's peak is exact when it set a new high

    def timeline_values(self, stats: AllocatorStats) -> list[float | None]:
        return [stats.metric_value(m.name) for m in self.metrics]

    def watch_thread(self) -> None:
        """No thread-local hooks to arm."""

    def release_cache(self) -> None:
        """JAX gives its pool back to the driver only when the process ends."""


def _int(stats: dict, key: str) -> int | None:
    value = stats.get(key)
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
