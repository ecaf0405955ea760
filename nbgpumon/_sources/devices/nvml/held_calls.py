"""NVML's every-tick calls, made without giving up the GIL.

Why: the binding (nvidia-ml-py) calls NVML through ``ctypes.CDLL``, which releases the GIL
around every call. Taking it back from a busy main thread (a training loop) forces a thread
switch each time: on the H200, a running sampler's two fast-tick calls took ~258 µs of wall
time against 1-8 µs each in a loop, and each hand-off also cost the loop. A function called
through a ``ctypes.PYFUNCTYPE`` prototype (what ``ctypes.PyDLL`` gives) keeps the GIL: no
hand-off, for a call that is over in microseconds.

The rule for which calls keep the GIL: only those made on every tick (the fast cadence) that
are plain getters measured in microseconds: memory info (v1 and v2, 8 µs) and utilization rates
(1-2 µs). Every other call releases it, as the binding makes it: field values (~158 µs),
``GetSamples`` (~1.4 ms), process lists, init and the once-only calls, and also the detail
cadence's temperature, power and clock (once a second: their hand-offs cost little, and a
driver slow to answer them would stall every Python thread). A kept call that takes longer than
``SLOW_CALL_NS`` ``SLOW_CALLS_ALLOWED`` times in a row goes back to the binding's releasing
function (in a row: a thread the OS preempts now and then is not a slow driver). Such a spell
passes (eight processes bringing up their CUDA contexts keep the driver busy for seconds), so
the library keeps the call again after a while (``NvmlLibrary.retry_kept_calls``).

A hung driver would now hang the sampler with the GIL held, so the whole kernel: a kept call
over ``STUCK_CALL_NS`` goes back to the releasing function at once, so that only that one call
holds the GIL (no Python code can cut a C call short). The main thread asks NVML only through
``BoundedCall``, with the GIL released.

The binding still loads NVML and resolves each function (``_nvmlGetFunctionPointer``); only
the calling convention differs. The structures are NVML's ABI (nvml.h), declared here so that
any binding version works, and the fake binding's C entry points write the same layout.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

SLOW_CALL_NS = 1_000_000  # a kept call this slow (1 ms) holds every other thread up too long
SLOW_CALLS_ALLOWED = 3  # ... this many times in a row: give it back
# A kept call this slow (50 ms) is no preempted thread but a driver not answering: it held every
# Python thread (the main one too) that long, so it is given back at once, not on its third.
STUCK_CALL_NS = 50_000_000


class Memory(ctypes.Structure):
    """NVML's ``nvmlMemory_t``, in bytes."""

    _fields_ = [
        ("total", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


class MemoryV2(ctypes.Structure):
    """NVML's ``nvmlMemory_v2_t``, in bytes, with what the driver and firmware reserve."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("total", ctypes.c_ulonglong),
        ("reserved", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


class Utilization(ctypes.Structure):
    """NVML's ``nvmlUtilization_t``, in percent."""

    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


# nvmlReturn_t f(nvmlDevice_t device, T *out), called with the GIL kept.
GIL_KEEPING_GETTER = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def gil_keeping_functions(
    binding: ModuleType, on_slow: Callable[[str, bool], None]
) -> dict[str, Callable[..., Any]]:
    """Replacements for the binding's every-tick functions, by the binding's names, with the
    same arguments, results and errors (``binding.NVMLError``), that keep the GIL.

    Empty where the binding cannot resolve NVML's C functions (another binding, or a driver
    without them): those calls then go through the binding. ``on_slow(name, stuck)`` is called
    when a kept call has been too slow too many times in a row (``stuck``: the last one was over
    ``STUCK_CALL_NS``); the caller should stop using it, at least for a while.
    """
    error = getattr(binding, "NVMLError", None)
    memory = _c_function(binding, "nvmlDeviceGetMemoryInfo")
    memory_v2 = _c_function(binding, "nvmlDeviceGetMemoryInfo_v2")
    utilization = _c_function(binding, "nvmlDeviceGetUtilizationRates")
    out: dict[str, Callable[..., Any]] = {}
    if error is None:
        return out
    if memory is not None and memory_v2 is not None:
        watch = _SlowWatch("nvmlDeviceGetMemoryInfo", on_slow, error)

        def nvmlDeviceGetMemoryInfo(handle: Any, version: int | None = None) -> Any:
            if version:
                info: Any = MemoryV2(version)
                call = memory_v2
            else:
                info, call = Memory(), memory
            return watch.call(call, handle, info)

        out["nvmlDeviceGetMemoryInfo"] = nvmlDeviceGetMemoryInfo
    if utilization is not None:
        util_watch = _SlowWatch("nvmlDeviceGetUtilizationRates", on_slow, error)

        def nvmlDeviceGetUtilizationRates(handle: Any) -> Any:
            return util_watch.call(utilization, handle, Utilization())

        out["nvmlDeviceGetUtilizationRates"] = nvmlDeviceGetUtilizationRates
    return out


class _SlowWatch:
    """Makes a kept call and counts its slow runs in a row; tells ``on_slow`` at the limit,
    then counts afresh (the call may be kept again later)."""

    def __init__(
        self, name: str, on_slow: Callable[[str, bool], None], error: Callable[[int], Exception]
    ) -> None:
        self.name, self.on_slow, self.error, self.count = name, on_slow, error, 0

    def call(self, function: Any, handle: Any, out: Any) -> Any:
        """Calls ``function(handle, &out)``, timed; ``out`` filled in, or the binding's
        NVMLError."""
        start = time.perf_counter_ns()
        ret = function(handle, ctypes.byref(out))
        took = time.perf_counter_ns() - start
        if took > SLOW_CALL_NS:
            self.count += 1 if took < STUCK_CALL_NS else SLOW_CALLS_ALLOWED
            if self.count >= SLOW_CALLS_ALLOWED:
                self.count = 0
                self.on_slow(self.name, took >= STUCK_CALL_NS)
        elif self.count:
            self.count = 0
        if ret:
            raise self.error(ret)
        return out


def fast_tick_functions(binding: ModuleType) -> tuple[Any, Any] | None:
    """NVML's C ``nvmlDeviceGetMemoryInfo_v2`` and ``nvmlDeviceGetUtilizationRates`` as
    GIL-keeping callables, for :class:`DeviceReads`; None where either can't be had."""
    memory_v2 = _c_function(binding, "nvmlDeviceGetMemoryInfo_v2")
    utilization = _c_function(binding, "nvmlDeviceGetUtilizationRates")
    return None if memory_v2 is None or utilization is None else (memory_v2, utilization)


class DeviceReads:
    """One device's every-tick calls bound once: the C functions, the device's handle and the
    structures they fill. A tick builds nothing (no structure, no ``byref``, no keyword arguments)
    and runs a few bytecodes around the two calls."""

    __slots__ = (
        "_made",
        "_memory_ref",
        "_on_slow",
        "_util_ref",
        "_version",
        "failed",
        "handle",
        "memory",
        "memory_v2",
        "slow",
        "util",
        "utilization",
    )

    def __init__(
        self,
        functions: tuple[Any, Any],
        handle: Any,
        version: int,
        made: list[int],
        on_slow: Callable[[bool], None],
    ) -> None:
        self.memory_v2, self.utilization = functions
        self.handle = handle
        self._version = version
        self.memory = MemoryV2(version)
        self.util = Utilization()
        self._memory_ref = ctypes.byref(self.memory)
        self._util_ref = ctypes.byref(self.util)
        self._made = made  # the library's count of the calls made this way: [calls]
        self._on_slow = on_slow  # told at SLOW_CALLS_ALLOWED slow runs in a row (stuck or not)
        self.slow = 0  # runs in a row that took over SLOW_CALL_NS
        self.failed = ""  # the metric whose call failed last ("memory_v2", "utilization")

    def call(self, utilization: bool = True) -> int:
        """The memory call, then (if it answered, and ``utilization``) the utilization call. Returns
        0 when they answered (``memory`` and ``util`` filled in), else the failed call's NVML error
        code, its metric in ``failed``. Never raises."""
        start = time.perf_counter_ns()
        self.memory.version = self._version  # (an input: the driver checks it)
        code = self.memory_v2(self.handle, self._memory_ref)
        if code:
            self.failed = "memory_v2"
            self._made[0] += 1
        elif utilization:
            code = self.utilization(self.handle, self._util_ref)
            if code:
                self.failed = "utilization"
            self._made[0] += 2
        else:
            self._made[0] += 1
        took = time.perf_counter_ns() - start
        if took > SLOW_CALL_NS:
            self.slow += 1 if took < STUCK_CALL_NS else SLOW_CALLS_ALLOWED
            if self.slow >= SLOW_CALLS_ALLOWED:
                self.slow = 0
                self._on_slow(took >= STUCK_CALL_NS)
        elif self.slow:
            self.slow = 0
        return code


def _c_function(binding: ModuleType, name: str) -> Any:
    """NVML's C function ``name`` as a GIL-keeping callable, or None where it can't be had."""
    resolve = getattr(binding, "_nvmlGetFunctionPointer", None)
    if resolve is None:
        return None
    try:
        pointer = resolve(name)  # the binding's own CDLL function (or the fake's C entry point)
        address = ctypes.cast(pointer, ctypes.c_void_p).value
    except Exception:  # missing from this driver, or not a C function: the binding's way
        return None
    return GIL_KEEPING_GETTER(address) if address else None
