"""The real nvidia-ml-py binding with NVML's C calls made nearly free, for measuring the Python
around them on any machine (no GPU needed).

The fast tick's C functions become libc's ``sigemptyset`` (returns 0 and writes only its
first argument, which is the "device handle" here, a buffer); the binding's other functions
are stubbed in Python. Everything else (the binding's lookups, nbgpumon's calls) runs as on
a GPU.
"""

from __future__ import annotations

import ctypes
from types import ModuleType


def stubbed_binding(gpus: int = 1) -> ModuleType:
    """``pynvml``, patched in place to answer for ``gpus`` GPUs; raises ImportError without it."""
    import pynvml

    handles = [ctypes.create_string_buffer(256) for _ in range(gpus)]
    libc = ctypes.CDLL(None)
    for name in (
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetUtilizationRates",
    ):
        pynvml._nvmlGetFunctionPointer_cache[name] = libc.sigemptyset
    stub = dict(
        nvmlInit_v2=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "stub",
        nvmlDeviceGetCount_v2=lambda: gpus,
        nvmlDeviceGetHandleByIndex_v2=lambda i: handles[i],
        nvmlDeviceGetUUID=lambda h: f"GPU-stub-{handles.index(h)}",
        nvmlDeviceGetName=lambda h: "stub GPU",
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetTemperature=lambda h, s: 50,
        nvmlDeviceGetPowerUsage=lambda h: 100000,
        nvmlDeviceGetClockInfo=lambda h, t: 1000,
        nvmlDeviceGetFieldValues=lambda h, f: [],
        nvmlDeviceGetComputeRunningProcesses_v3=lambda h: [],
    )
    for k, v in stub.items():
        setattr(pynvml, k, v)
    return pynvml
