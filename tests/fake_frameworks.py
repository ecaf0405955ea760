"""Stand-ins for JAX and CuPy at the library boundary, for the allocator sources' parsing and
fault tests: the same module names, attributes and calls nbgpumon makes, with the numbers a
test sets. Insert them with ``install(monkeypatch, ...)``; the real CPU build of JAX is used
wherever a test can (tests/test_jax_cpu.py)."""

from __future__ import annotations

import contextlib
import types
from typing import Any

GIB = 2**30


class FakeJaxDevice:
    def __init__(self, hardware_id: int, platform: str = "gpu") -> None:
        self.local_hardware_id = hardware_id
        self.platform = platform
        self.stats: Any = {"bytes_in_use": 0, "peak_bytes_in_use": 0, "bytes_limit": 100 * GIB}
        self.calls = 0

    def memory_stats(self) -> Any:
        self.calls += 1
        if isinstance(self.stats, Exception):
            raise self.stats
        return None if self.stats is None else dict(self.stats)

    def use(self, in_use: int, pool: int | None = None) -> None:
        """Arrays now hold ``in_use`` bytes; the peak follows, as JAX's never comes down."""
        self.stats["bytes_in_use"] = in_use
        self.stats["peak_bytes_in_use"] = max(self.stats["peak_bytes_in_use"], in_use)
        if pool is not None:
            self.stats["pool_bytes"] = pool


class FakeJaxClient:
    def __init__(self, devices: list[FakeJaxDevice]) -> None:
        self.devices = devices

    def local_devices(self) -> list[FakeJaxDevice]:
        return list(self.devices)


def fake_jax(backends: dict[str, FakeJaxClient]) -> dict[str, types.ModuleType]:
    """``jax`` and ``jax._src.xla_bridge`` with ``_backends`` as given ({}: none started)."""
    jax = types.ModuleType("jax")
    bridge = types.ModuleType("jax._src.xla_bridge")
    bridge._backends = backends

    def devices() -> None:  # what nbgpumon must never call: it starts every backend
        raise AssertionError("jax.devices() was called")

    jax.devices = devices
    return {"jax": jax, "jax._src.xla_bridge": bridge}


class FakeCupyPool:
    """CuPy's default pool: answers for the current device, as the real one does."""

    def __init__(self, cupy: FakeCupy) -> None:
        self.cupy = cupy
        self.used: dict[int, int] = {}
        self.total: dict[int, int] = {}
        self.freed: list[int] = []

    def _device(self) -> int:
        return self.cupy.current

    def used_bytes(self) -> int:
        return self.used.get(self._device(), 0)

    def total_bytes(self) -> int:
        return self.total.get(self._device(), 0)

    def get_limit(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        d = self._device()
        self.freed.append(d)
        self.total[d] = self.used.get(d, 0)


class FakeCupy(types.ModuleType):
    """``cupy`` with ``cuda.Device``, ``cuda.MemoryHook`` and the default pools."""

    def __init__(self) -> None:
        super().__init__("cupy")
        self.current = 0
        self.entered: list[int] = []  # every device made current, in order
        self.hooks: list[Any] = []
        self.pool = FakeCupyPool(self)
        self.pinned = types.SimpleNamespace(freed=0)
        self.pinned.free_all_blocks = lambda: setattr(self.pinned, "freed", self.pinned.freed + 1)
        cupy = self

        @contextlib.contextmanager
        def device(index: int):
            before, cupy.current = cupy.current, index
            cupy.entered.append(index)
            try:
                yield
            finally:
                cupy.current = before

        class MemoryHook:
            name = "MemoryHook"

            def __enter__(self) -> Any:
                cupy.hooks.append(self)
                return self

            def __exit__(self, *exc: Any) -> None:
                cupy.hooks.remove(self)

        self.cuda = types.SimpleNamespace(Device=device, MemoryHook=MemoryHook)

    def get_default_memory_pool(self) -> FakeCupyPool:
        return self.pool

    def get_default_pinned_memory_pool(self) -> Any:
        return self.pinned

    def malloc(self, device: int, size: int) -> None:
        """What CuPy does on the calling thread: the pool grows, then the hooks hear of it."""
        self.pool.used[device] = self.pool.used.get(device, 0) + size
        self.pool.total[device] = max(self.pool.total.get(device, 0), self.pool.used[device])
        before, self.current = self.current, device
        try:
            for hook in list(self.hooks):
                hook.malloc_postprocess(
                    device_id=device, size=size, mem_size=size, mem_ptr=1, pmem_id=0
                )
        finally:
            self.current = before

    def free(self, device: int, size: int) -> None:
        self.pool.used[device] -= size  # the block stays cached in the pool


class FakeContexts:
    """The driver's answer to "has this process a context on device N?"."""

    def __init__(self, active: set[int] | None = None) -> None:
        self.up = set(active or ())

    def active(self, ordinal: int) -> bool:
        return ordinal in self.up
