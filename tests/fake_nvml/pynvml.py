"""A stand-in for nvidia-ml-py's ``pynvml`` module, for fault tests only.

It fakes NVML at the library boundary: the same function names, error class and return
codes, and structures with the same attribute names. Put this folder first on PYTHONPATH
and describe the machine in the environment variable ``NBGPUMON_FAKE_NVML`` (JSON):

    {"devices": [{"name": "Fake GPU", "used": 1073741824}],   # one dict per GPU
     "import_error": false,           # importing this module fails (binding missing)
     "init_error": 12,                # nvmlInit raises this NVML error code
     "not_supported": ["nvmlDeviceGetPowerUsage"],   # these answer NotSupported (a device's
                                                     # own "not_supported": on it alone)
     "missing": ["nvmlDeviceGetSamples"],            # these functions don't exist
     "lost_after": 50,                # after this many device calls, GPU_IS_LOST for all
     "call_delay": 0.001,             # seconds each device call takes
     "init_delay": 2.0,               # seconds nvmlInit takes (a driver stuck at start)
     "processes": [{"pid": "self", "used": 1048576}, {"pid": 0, "used": null},
                   {"pid": "descendants", "used_from": "/tmp/gpu-use"}]}   # real children

A device with ``"accounting": true`` has the driver's per-process accounting on: the highest
figure each process was listed with is its accounted peak (or the ``peak`` its file says).

A GPU with ``"mig": [...]`` is in MIG mode, each entry one MIG device (a compute instance of a
GPU instance) with its own memory, as a real driver answers on its handle:

    {"name": "NVIDIA H200", "uuid": "GPU-…", "total": 150754820096,
     "mig": [{"uuid": "MIG-…", "gpu_instance": 1, "compute_instance": 0,
              "profile": "1g.18gb", "total": 17716740096, "used": 4294967296}]}

A MIG device's name is its GPU's with `` MIG <profile>`` after it; on its handle utilization,
temperature, power, clocks and field values answer NotSupported (as they do on real drivers),
and so does ``nvmlDeviceGetMigMode``. A GPU without ``"mig"`` answers NotSupported to
``nvmlDeviceGetMigMode`` (a GPU that cannot do MIG) unless ``"mig_mode": 0`` says it can.

``configure(dict)`` does the same in-process.

Like the real binding, it also hands out C function pointers (``_nvmlGetFunctionPointer``)
for the calls nbgpumon makes on every tick, so those can be called the way nbgpumon calls
the real library's, without the binding: ctypes callbacks that answer as the Python functions
do (faults included) and write NVML's structures. ``c_calls`` counts the calls made through
them, ``binding_calls`` those made through the Python functions, by name.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from types import SimpleNamespace

__version__ = "fake-13.0"

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_GPU_UTILIZATION_SAMPLES = 1
nvmlMemory_v2 = 0x02000028

_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
}


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"Unknown Error {self.value}")


_config: dict = {}
# NVML counts its inits: nvmlShutdown ends it only at the last one's (as the real library does)
_state = {"initialised": False, "inits": 0, "device_calls": 0, "started": time.time()}
c_calls: dict[str, int] = {}
binding_calls: dict[str, int] = {}


def configure(config: dict) -> None:
    """Describe the fake machine (see the module docstring) and reset its state."""
    _config.clear()
    _config.update(config)
    _state.update(initialised=False, inits=0, device_calls=0, started=time.time())
    c_calls.clear()
    binding_calls.clear()
    for name in _config.get("missing", []):
        globals().pop(name, None)


if os.environ.get("NBGPUMON_FAKE_NVML"):
    _env = json.loads(os.environ["NBGPUMON_FAKE_NVML"])
    if _env.get("import_error"):
        raise ImportError("fake: the NVML binding is not installed")
    configure(_env)


def _check(name: str) -> None:
    if name in _config.get("not_supported", []):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


class _Handle(ctypes.c_void_p):
    """A device handle: pointer-sized, as NVML's are, so that a C function can take one. A
    GPU's is its index + 1 (a null pointer is no device); a MIG device's is
    ``_MIG_BASE * (GPU index + 1) + its index + 1``."""

    @property
    def index(self) -> int:
        return (self.value or 0) % _MIG_BASE - 1 if self.is_mig else (self.value or 0) - 1

    @property
    def gpu(self) -> int:
        """The index of the GPU it is, or the GPU its MIG device is on."""
        return (self.value or 0) // _MIG_BASE - 1 if self.is_mig else self.index

    @property
    def is_mig(self) -> bool:
        return (self.value or 0) >= _MIG_BASE


_MIG_BASE = 1000
# what a MIG device's handle answers NotSupported to, as real drivers do
_NOT_ON_MIG = {
    "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetClockInfo", "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetSamples", "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount",
}  # fmt: skip


def _device(handle: _Handle, name: str, through_c: bool = False) -> dict:
    calls = c_calls if through_c else binding_calls
    calls[name] = calls.get(name, 0) + 1
    if not _state["initialised"]:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    _state["device_calls"] += 1
    if _config.get("call_delay"):
        time.sleep(_config["call_delay"])  # a slow driver: ticks hold their lock for long
    lost_after = _config.get("lost_after")
    if lost_after is not None and _state["device_calls"] > lost_after:
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    _check(name)
    gpu = _config.get("devices", [])[handle.gpu]
    if name in gpu.get("not_supported", ()):
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    if not handle.is_mig:
        return gpu
    if name in _NOT_ON_MIG:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return _mig_device(gpu, handle.index)


def _mig_device(gpu: dict, index: int) -> dict:
    """MIG device ``index`` of ``gpu`` with its defaults filled in."""
    mig = dict(gpu["mig"][index])
    profile = mig.get("profile", "1g.18gb")
    mig.setdefault("name", f"{gpu.get('name', 'Fake GPU')} MIG {profile}")
    mig.setdefault("uuid", f"MIG-{index:08d}-fake-0000-0000-000000000000")
    mig.setdefault("processes", [])
    return mig


# -- life cycle ---------------------------------------------------------------------------
def nvmlInit() -> None:
    if _config.get("init_delay"):
        time.sleep(_config["init_delay"])
    code = _config.get("init_error")
    if code:
        raise NVMLError(code)
    _state["inits"] += 1
    _state["initialised"] = True


nvmlInit_v2 = nvmlInit


def nvmlShutdown() -> None:
    _state["inits"] = max(0, _state["inits"] - 1)
    _state["initialised"] = _state["inits"] > 0


def nvmlSystemGetDriverVersion() -> str:
    return "580.00.fake"


def nvmlDeviceGetCount() -> int:
    if not _state["initialised"]:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    return len(_config.get("devices", []))


nvmlDeviceGetCount_v2 = nvmlDeviceGetCount


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    if index >= nvmlDeviceGetCount():
        raise NVMLError(2)
    return _Handle(index + 1)


nvmlDeviceGetHandleByIndex_v2 = nvmlDeviceGetHandleByIndex


# -- device reads -------------------------------------------------------------------------
def nvmlDeviceGetName(handle: _Handle) -> str:
    return _device(handle, "nvmlDeviceGetName").get("name", "Fake GPU")


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    default = f"GPU-{handle.gpu:08d}-fake-0000-0000-000000000000"
    return _device(handle, "nvmlDeviceGetUUID").get("uuid", default)


def nvmlDeviceGetMemoryInfo(handle: _Handle, version: int | None = None, _c: bool = False):
    d = _device(handle, "nvmlDeviceGetMemoryInfo", _c)
    total = d.get("total", 80 * 2**30)
    used = d.get("used", 2**30)
    info = SimpleNamespace(total=total, used=used, free=total - used)
    if version:
        info.reserved = d.get("reserved", 512 * 2**20)
    return info


def nvmlDeviceGetUtilizationRates(handle: _Handle, _c: bool = False):
    d = _device(handle, "nvmlDeviceGetUtilizationRates", _c)
    return SimpleNamespace(gpu=d.get("util", 42), memory=d.get("mem_util", 17))


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:
    return _device(handle, "nvmlDeviceGetTemperature").get("temperature", 55)


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:
    return _device(handle, "nvmlDeviceGetPowerUsage").get("power_mw", 250_000)


def nvmlDeviceGetEnforcedPowerLimit(handle: _Handle) -> int:
    return _device(handle, "nvmlDeviceGetEnforcedPowerLimit").get("power_limit_mw", 700_000)


def nvmlDeviceGetClockInfo(handle: _Handle, clock: int) -> int:
    return _device(handle, "nvmlDeviceGetClockInfo").get("sm_clock", 1980)


def nvmlDeviceGetFanSpeed(handle: _Handle) -> int:
    return _device(handle, "nvmlDeviceGetFanSpeed").get("fan_speed", 30)


def nvmlDeviceGetFieldValues(handle: _Handle, field_ids: list[int]):
    _device(handle, "nvmlDeviceGetFieldValues")
    now_us = int(time.time() * 1e6)
    elapsed = now_us / 1e6 - _state["started"]
    # counters growing at 1 MB/s (TX) and 2 MB/s (RX)
    rates = {197: 1_000_000, 198: 2_000_000}
    return [
        SimpleNamespace(
            fieldId=f,
            nvmlReturn=NVML_SUCCESS,
            timestamp=now_us,
            value=SimpleNamespace(ullVal=int(rates.get(f, 0) * elapsed)),
        )
        for f in field_ids
    ]


def nvmlDeviceGetComputeRunningProcesses(handle: _Handle):
    d = _device(handle, "nvmlDeviceGetComputeRunningProcesses")
    out = []
    for pid, used, _ in _listed(handle, d):
        out.append(SimpleNamespace(pid=pid, usedGpuMemory=used))
    return out


def _listed(handle: _Handle, d: dict):
    """(pid, used, figures) of each process on the device. ``{"pid": "descendants",
    "used_from": DIR}`` lists every live descendant of this process that has a file
    ``DIR/<pid>`` holding JSON ``{"used": bytes, "sm": percent, "peak": bytes}``: real child
    processes, each saying what it holds."""
    for p in d.get("processes", _config.get("processes", [])):
        if p.get("pid") == "descendants":
            for pid in _descendants():
                try:
                    with open(os.path.join(p["used_from"], str(pid))) as f:
                        figures = json.load(f)
                except (OSError, ValueError):
                    continue
                used = int(figures.get("used", 0))
                key = (handle.value, pid)
                _peaks[key] = max(_peaks.get(key, 0), int(figures.get("peak", used)))
                yield pid, used, figures
        else:
            pid = os.getpid() if p.get("pid") == "self" else int(p.get("pid", 0))
            yield pid, p.get("used"), p


_peaks: dict[tuple[int, int], int] = {}  # (handle, pid) -> highest used listed: "accounting"


def _descendants() -> list[int]:
    found, queue = [], [os.getpid()]
    while queue:
        pid = queue.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += kids
            queue += kids
    return found


def nvmlDeviceGetProcessUtilization(handle: _Handle, last_seen_us: int):
    d = _device(handle, "nvmlDeviceGetProcessUtilization")
    now_us = int(time.time() * 1e6)
    samples = [
        SimpleNamespace(pid=pid, timeStamp=now_us, smUtil=int(f["sm"]), memUtil=0)
        for pid, _, f in _listed(handle, d)
        if isinstance(f, dict) and "sm" in f
    ]
    if not samples or now_us <= last_seen_us:
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return samples


def nvmlDeviceGetAccountingMode(handle: _Handle) -> int:
    return 1 if _device(handle, "nvmlDeviceGetAccountingMode").get("accounting") else 0


def nvmlDeviceGetAccountingStats(handle: _Handle, pid: int):
    d = _device(handle, "nvmlDeviceGetAccountingStats")
    if not d.get("accounting") or (handle.value, pid) not in _peaks:
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return SimpleNamespace(maxMemoryUsage=_peaks[(handle.value, pid)], isRunning=1)


nvmlDeviceGetComputeRunningProcesses_v3 = nvmlDeviceGetComputeRunningProcesses


def nvmlDeviceGetSamples(handle: _Handle, kind: int, last_seen_us: int):
    d = _device(handle, "nvmlDeviceGetSamples")
    now_us = int(time.time() * 1e6)
    stamps = range(now_us - 2_000_000, now_us, 200_000)
    return 1, [
        SimpleNamespace(timeStamp=t, sampleValue=SimpleNamespace(uiVal=d.get("util", 42)))
        for t in stamps
        if t > last_seen_us
    ]


# -- MIG ----------------------------------------------------------------------------------
def nvmlDeviceGetMigMode(handle: _Handle) -> list[int]:
    d = _device(handle, "nvmlDeviceGetMigMode")
    if "mig" in d:
        return [1, 1]
    if "mig_mode" in d:
        return [d["mig_mode"], d["mig_mode"]]
    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


def nvmlDeviceGetMaxMigDeviceCount(handle: _Handle) -> int:
    d = _device(handle, "nvmlDeviceGetMaxMigDeviceCount")
    return d.get("max_mig", 7) if "mig" in d or "mig_mode" in d else 0


def nvmlDeviceGetMigDeviceHandleByIndex(handle: _Handle, index: int) -> _Handle:
    d = _device(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
    if handle.is_mig:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    if index >= len(d.get("mig", [])):
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    return _Handle(_MIG_BASE * (handle.index + 1) + index + 1)


def nvmlDeviceIsMigDeviceHandle(handle: _Handle) -> ctypes.c_uint:
    _device(handle, "nvmlDeviceIsMigDeviceHandle")
    return ctypes.c_uint(1 if handle.is_mig else 0)  # the binding returns the c_uint itself


def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle: _Handle) -> _Handle:
    _device(handle, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
    if not handle.is_mig:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return _Handle(handle.gpu + 1)


def nvmlDeviceGetGpuInstanceId(handle: _Handle) -> int:
    d = _device(handle, "nvmlDeviceGetGpuInstanceId")
    if not handle.is_mig:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return d.get("gpu_instance", handle.index + 1)


def nvmlDeviceGetComputeInstanceId(handle: _Handle) -> int:
    d = _device(handle, "nvmlDeviceGetComputeInstanceId")
    if not handle.is_mig:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
    return d.get("compute_instance", 0)


# -- C entry points: NVML's ABI, for callers that skip the binding -------------------------
class _Memory(ctypes.Structure):
    _fields_ = [(f, ctypes.c_ulonglong) for f in ("total", "free", "used")]


class _MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint)] + [
        (f, ctypes.c_ulonglong) for f in ("total", "reserved", "free", "used")
    ]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


_GETTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def _c_entry(read, layout):
    """A C function ``nvmlReturn_t f(nvmlDevice_t, T *out)`` answering as ``read`` does."""

    def entry(handle: int | None, out: int | None) -> int:
        if not handle or not out:
            return 8  # NVML_ERROR_INVALID_ARGUMENT
        try:
            got = read(_Handle(handle))
        except NVMLError as exc:
            return exc.value
        except Exception:  # an exception must not cross a C boundary
            return 999  # NVML_ERROR_UNKNOWN
        target = layout.from_address(out)
        for name, _ in layout._fields_:
            if name != "version":
                setattr(target, name, getattr(got, name))
        return NVML_SUCCESS

    return _GETTER(entry)


_C_ENTRIES = {  # C name -> (the Python function it answers as, how it reads, structure)
    "nvmlDeviceGetMemoryInfo": (
        "nvmlDeviceGetMemoryInfo",
        lambda h: nvmlDeviceGetMemoryInfo(h, _c=True),
        _Memory,
    ),
    "nvmlDeviceGetMemoryInfo_v2": (
        "nvmlDeviceGetMemoryInfo",
        lambda h: nvmlDeviceGetMemoryInfo(h, nvmlMemory_v2, _c=True),
        _MemoryV2,
    ),
    "nvmlDeviceGetUtilizationRates": (
        "nvmlDeviceGetUtilizationRates",
        lambda h: nvmlDeviceGetUtilizationRates(h, _c=True),
        _Utilization,
    ),
}
_c_functions: dict[str, object] = {}  # kept alive: ctypes callbacks die with their object


def _nvmlGetFunctionPointer(name: str):
    """The C function ``name``, as the real binding resolves it (FUNCTION_NOT_FOUND if none)."""
    if not _state["initialised"]:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    entry = _C_ENTRIES.get(name)
    if entry is None or entry[0] not in globals() or name in _config.get("missing", []):
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
    if name not in _c_functions:
        _c_functions[name] = _c_entry(entry[1], entry[2])
    return _c_functions[name]
