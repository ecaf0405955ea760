"""The holder scan over JAX arrays (the real CPU build) and CuPy arrays (a stand-in module)."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from nbgpumon._forensics import holder_scan as holders

from fake_shell import by_name, shell_with

MIB = 2**20


# -- JAX, for real: a CPU build's arrays are host memory ---------------------------------
def test_a_jax_array_is_host_memory_counted_once_and_not_after_delete():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.ones((1024, 256), dtype=jnp.float32)
    gone = jnp.ones((1024, 256), dtype=jnp.float32)
    gone.delete()
    shell = shell_with(x=x, same=[x], gone=gone)
    scan = holders.scan(shell, "host")
    assert by_name(scan) == {"x": MIB}
    assert scan.holders[0].storages == 1
    assert holders.scan(shell, "cuda").holders == ()
    assert holders.holds_memory({"k": x})
    assert not holders.holds_memory(gone)


# -- CuPy, at the library boundary: a stand-in module in sys.modules ----------------------
class _Array:
    def __init__(self, mem: SimpleNamespace, device: int, nbytes: int, base=None) -> None:
        self.data = SimpleNamespace(mem=mem, ptr=mem.ptr)
        self.device = SimpleNamespace(id=device)
        self.nbytes = nbytes
        self.base = base

    def view(self) -> _Array:
        return _Array(self.data.mem, self.device.id, self.nbytes // 2, base=self)


class _Broken(_Array):
    @property
    def data(self):
        raise RuntimeError("no device")

    @data.setter
    def data(self, value) -> None:
        pass


@pytest.fixture
def cupy(monkeypatch):
    fake = types.ModuleType("cupy")
    fake.ndarray = _Array
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def _array(ptr: int, size: int, device: int = 0) -> _Array:
    # the pool rounds allocations up: the chunk is bigger than the array
    return _Array(SimpleNamespace(ptr=ptr, size=size), device, size - 512)


def test_a_cupy_array_and_its_view_count_once_at_the_pool_chunk_size(cupy):
    a = _array(0x1000, 2 * MIB)
    scan = holders.scan(shell_with(a=a, view=a.view(), views=[a.view()]), "cuda")
    assert by_name(scan) == {"a": 2 * MIB}


def test_cupy_arrays_follow_the_device_filter(cupy):
    shell = shell_with(zero=_array(0x1000, MIB, 0), one=_array(0x1000, 3 * MIB, 1))
    assert by_name(holders.scan(shell, "cuda:1")) == {"one": 3 * MIB}
    assert by_name(holders.scan(shell, "cuda")) == {"zero": MIB, "one": 3 * MIB}
    assert holders.scan(shell, "host").holders == ()


def test_a_cupy_array_that_fails_is_skipped(cupy):
    broken = _Broken(SimpleNamespace(ptr=0x1000, size=MIB), 0, MIB)
    scan = holders.scan(shell_with(broken=broken, fine=_array(0x2000, MIB)), "any")
    assert by_name(scan) == {"fine": MIB}
    assert not holders.holds_memory([broken])


def test_holds_memory_sees_a_cupy_array(cupy):
    assert holders.holds_memory([_array(0x1000, MIB)])
    assert not holders.holds_memory([1, "two"])


def test_without_a_memory_object_a_cupy_view_is_credited_to_its_owner_once(cupy):
    owner = _array(0x1000, MIB)
    owner.data = SimpleNamespace(ptr=0x1000)  # no .mem: fall back to the base and nbytes
    view = _Array(SimpleNamespace(ptr=0x1100), 0, 1024, base=owner)
    view.data = SimpleNamespace(ptr=0x1100)
    assert by_name(holders.scan(shell_with(view=view, owner=owner), "cuda:0")) == {
        "view": MIB - 512
    }


def test_nbgpumon_s_own_monitor_is_no_holder_of_the_user_s_arrays():
    # the monitor's timeline is its own memory, and its shell reaches every variable
    import numpy as np

    from nbgpumon import Monitor

    mon = Monitor(nvml_module=None)
    try:
        data = np.ones(2**18)  # 2 MiB
        shell = shell_with(mon=mon, data=data)
        mon._shell = lambda: shell
        # the monitor now refers to the shell, as after a cell
        mon._session.cells_pipeline._leaks(shell)
        found = by_name(holders.scan(shell, "host"))
        assert found == {"data": 2 * 2**20}, found
    finally:
        mon.close()
