"""The fast tick's NVML calls keep the GIL; the others release it, through the binding. Faked
at the library boundary: the fake binding's C entry points, and a real C function that says
whether its caller holds the GIL."""

from __future__ import annotations

import ctypes
import time
from types import ModuleType

import pytest

from nbgpumon import Monitor
from nbgpumon._sources.devices.nvml.held_calls import SLOW_CALLS_ALLOWED, gil_keeping_functions
from nbgpumon._sources.devices.nvml.library import KEEP_AGAIN_AFTER, KEEP_AGAIN_MAX
from nbgpumon._sources.devices.nvml.source import FAST_METRICS, NvmlSource

from notebook_runner import fake_pynvml

ONE_GPU = {"devices": [{"name": "Fake H200", "used": 3 * 2**30, "total": 141 * 2**30}]}
KEPT = ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates")


def metric(row: list, name: str):
    return row[FAST_METRICS.index(name)]


def through_the_binding_only(fake: ModuleType) -> ModuleType:
    """The fake as a binding that hands out no C functions: every call is the binding's."""
    del fake._nvmlGetFunctionPointer
    return fake


def test_the_fast_calls_reach_nvml_directly_and_the_slower_ones_through_the_binding():
    fake = fake_pynvml(**ONE_GPU)
    source = NvmlSource(fake)
    assert source.open()
    assert source.library.gil_kept == KEPT
    fake.c_calls.clear()
    fake.binding_calls.clear()
    calls0, kept0 = source.library.calls, source.library.gil_kept_calls
    for _ in range(3):
        row = source.read()  # every cadence: fast, detail and slow reads
    source.read_util_samples()
    source.read_processes()  # (the process source's, at its own cadence)
    assert metric(row, "mem_used") == 3 * 2**30 and metric(row, "mem_reserved") == 512 * 2**20
    assert metric(row, "gpu_util") == 42 and metric(row, "mem_util") == 17
    assert fake.c_calls == {"nvmlDeviceGetMemoryInfo": 3, "nvmlDeviceGetUtilizationRates": 3}
    assert set(fake.binding_calls) == {
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetFieldValues",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetSamples",
    }
    assert source.library.gil_kept_calls - kept0 == 6
    assert source.library.calls - calls0 == 6 + sum(fake.binding_calls.values())


def gil_probe_binding() -> ModuleType:
    """A binding whose every C function is CPython's ``PyGILState_Check``: it returns 1 when
    the thread calling it holds the GIL, 0 when the call released it (the extra arguments a
    getter passes are ignored under the x86-64 and arm64 calling conventions)."""
    binding = ModuleType("gil_probe")

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(value)
            self.value = value

    binding.NVMLError = NVMLError
    binding._nvmlGetFunctionPointer = lambda name: ctypes.pythonapi.PyGILState_Check
    return binding


def test_a_kept_call_runs_in_c_with_the_gil_held_where_the_binding_s_way_releases_it():
    binding = gil_probe_binding()
    kept = gil_keeping_functions(binding, on_slow=lambda name, stuck: None)
    assert tuple(kept) == KEPT
    handle = ctypes.c_void_p(1)
    for call in kept.values():
        with pytest.raises(binding.NVMLError) as held:
            call(handle)  # its "return code" is PyGILState_Check's answer
        assert held.value.value == 1
    address = ctypes.cast(ctypes.pythonapi.PyGILState_Check, ctypes.c_void_p).value
    released = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(address)
    assert released(handle, None) == 0  # called as ctypes.CDLL calls: without the GIL


@pytest.mark.parametrize("way", ["kept", "binding"])
def test_a_lost_gpu_in_a_gil_keeping_call_says_the_same_as_through_the_binding(way):
    fake = fake_pynvml(**ONE_GPU)
    mon = Monitor(nvml_module=fake if way == "kept" else through_the_binding_only(fake))
    try:
        assert mon._session.device_source.library.gil_kept == (KEPT if way == "kept" else ())
        mon._session.sampler.tick()
        fake.configure({**ONE_GPU, "lost_after": 0})  # from the next device call on
        fake._state["initialised"] = True
        mon._session.sampler.tick()
        assert mon._session.device_source.status == "GPU lost: gpu0 (reset or reboot needed)"
        assert mon._session.sampler.error == ""
        assert (fake.c_calls if way == "kept" else fake.binding_calls).get(KEPT[0]) == 1
    finally:
        mon.close()


@pytest.mark.parametrize("way", ["kept", "binding"])
def test_unsupported_utilization_is_asked_once_and_named_the_same_either_way(way):
    fake = fake_pynvml(**ONE_GPU, not_supported=["nvmlDeviceGetUtilizationRates"])
    source = NvmlSource(fake if way == "kept" else through_the_binding_only(fake))
    source.open()
    rows = [source.read() for _ in range(4)]
    assert all(metric(r, "gpu_util") is None and metric(r, "mem_util") is None for r in rows)
    assert all(metric(r, "mem_used") == 3 * 2**30 for r in rows)
    calls = fake.c_calls if way == "kept" else fake.binding_calls
    assert calls["nvmlDeviceGetUtilizationRates"] == 1
    assert source.library.disabled_metrics() == {(0, "utilization"): "not supported on this device"}
    assert source.status == "ok"


def test_a_kept_call_slow_now_and_then_keeps_the_gil():
    fake = fake_pynvml(**ONE_GPU)
    source = NvmlSource(fake)
    source.open()
    for _ in range(3):  # slow short of the limit, then quick again: a preempted thread
        fake._config["call_delay"] = 0.002
        for _ in range(SLOW_CALLS_ALLOWED - 1):
            source.read(frozenset({"fast"}))
        fake._config["call_delay"] = 0
        source.read(frozenset({"fast"}))
    assert source.library.gil_kept == KEPT
    assert not [n for n in source.library.notes if "releasing the GIL" in n]


def test_a_kept_call_that_is_slow_goes_back_to_the_binding_and_says_so():
    fake = fake_pynvml(**ONE_GPU, call_delay=0.002)  # 2 ms a device call: a slow driver
    source = NvmlSource(fake)
    source.open()
    fast = frozenset({"fast"})
    reads = 0
    while source.library.gil_kept and reads < 10 * SLOW_CALLS_ALLOWED:
        source.read(fast)
        reads += 1
    assert source.library.gil_kept == ()
    fake.c_calls.clear()
    fake.binding_calls.clear()
    row = source.read(fast)
    assert fake.c_calls == {}
    assert fake.binding_calls == {KEPT[0]: 1, KEPT[1]: 1}
    assert metric(row, "mem_used") == 3 * 2**30 and metric(row, "gpu_util") == 42
    assert [n for n in source.library.notes if "releasing the GIL" in n] == [
        f"{name} took over 1 ms on this driver: now called releasing the GIL, for 60 s"
        for name in KEPT
    ]


def test_a_slow_spell_passes_and_the_calls_keep_the_gil_again_later_each_time_later():
    fake = fake_pynvml(**ONE_GPU, call_delay=0.002)  # a driver busy for a while
    source = NvmlSource(fake)
    source.open()
    lib, fast = source.library, frozenset({"fast"})

    def slow_spell() -> None:
        fake._config["call_delay"] = 0.002
        reads = 0
        while lib.gil_kept and reads < 10 * SLOW_CALLS_ALLOWED:
            source.read(fast)
            reads += 1
        assert lib.gil_kept == ()
        fake._config["call_delay"] = 0

    slow_spell()
    now = time.monotonic()
    lib.retry_kept_calls(now + KEEP_AGAIN_AFTER - 5)
    assert lib.gil_kept == ()  # (not yet)
    lib.retry_kept_calls(now + KEEP_AGAIN_AFTER + 1)
    assert lib.gil_kept == KEPT
    fake.c_calls.clear()
    fake.binding_calls.clear()
    row = source.read(fast)  # the bound calls are made again, GIL kept
    assert fake.binding_calls == {}
    assert fake.c_calls == {KEPT[0]: 1, KEPT[1]: 1}
    assert metric(row, "mem_used") == 3 * 2**30
    notes = [n for n in lib.notes if "GIL" in n]
    assert notes == [
        f"{name} took over 1 ms on this driver (1 slow spell): called releasing the GIL for a "
        "while, now kept again"
        for name in KEPT
    ]
    slow_spell()  # again: twice as long before the next try, one note a function still
    now = time.monotonic()
    lib.retry_kept_calls(now + KEEP_AGAIN_AFTER + 1)
    assert lib.gil_kept == ()
    assert [n for n in lib.notes if "GIL" in n] == [
        f"{name} took over 1 ms on this driver: now called releasing the GIL, for 120 s"
        for name in KEPT
    ]
    lib.retry_kept_calls(now + 2 * KEEP_AGAIN_AFTER + 1)
    assert lib.gil_kept == KEPT
    assert "(2 slow spells)" in lib.notes[-1]


def test_a_kept_call_that_did_not_answer_is_never_kept_again():
    fake = fake_pynvml(**ONE_GPU, call_delay=0.06)  # over STUCK_CALL_NS: given back at once
    source = NvmlSource(fake)
    source.open()
    source.read(frozenset({"fast"}))
    assert source.library.gil_kept == ()
    source.library.retry_kept_calls(time.monotonic() + 10 * KEEP_AGAIN_MAX)
    assert source.library.gil_kept == ()
    assert [n for n in source.library.notes if "GIL" in n] == [
        f"{name} did not answer for over 50 ms: now called releasing the GIL" for name in KEPT
    ]
