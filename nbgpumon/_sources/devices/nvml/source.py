"""NVML: the device's view (memory, utilization, power, clocks, PCIe, other processes)."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from types import ModuleType

from ...._foundation.metrics import columns_for
from ...base import CADENCES, DETAIL, REPEAT, SLOW
from ..protocol import DeviceFacts, GpuDevice, GpuProcess, MigPart, ProcessUtil
from .cuda_devices import cuda_view, map_by_uuid
from .held_calls import DeviceReads
from .library import NA, NvmlLibrary, shadowing_note
from .metrics import LABEL, METRICS, SOURCE
from .mig_devices import MigDevice, mig_devices

# NVML constants used here, by value, so that the code reads the same with any binding version.
_TEMPERATURE_GPU = 0
_CLOCK_SM = 1
_GPU_UTILIZATION_SAMPLES = 1
_FI_PCIE_TX_BYTES = 197  # NVML_FI_DEV_PCIE_COUNT_TX_BYTES: a counter, differenced below
_FI_PCIE_RX_BYTES = 198
_MEMORY_V2 = 0x02000028  # nvmlMemory_v2: adds "reserved" (driver/firmware-held memory)
_SUCCESS = 0
# A read this slow means the driver is not answering (a healthy one answers in microseconds to
# a few milliseconds): views say so, and the main thread stops asking (seconds).
NOT_ANSWERING_AFTER = 0.5

FAST_METRICS = tuple(m.name for m in METRICS)  # one device's values in a row, in this order
EVERY = frozenset(CADENCES)
_AT = {name: i for i, name in enumerate(FAST_METRICS)}  # a metric's place in a device's values
_DETAILS = ("temperature", "power", "sm_clock", "pcie_tx", "pcie_rx")  # the detail cadence's
_MEM_USED, _MEM_RESERVED, _MEM_TOTAL = _AT["mem_used"], _AT["mem_reserved"], _AT["mem_total"]
_GPU_UTIL, _MEM_UTIL = _AT["gpu_util"], _AT["mem_util"]
# the reads NvmlLibrary can disable on a device (its ``metric=``) -> the metrics they give
_READS = {
    "memory": ("mem_used", "mem_reserved", "mem_total"),
    "memory_v2": ("mem_reserved",),  # v1 still gives used and total
    "utilization": ("gpu_util", "mem_util"),  # NotSupported on a MIG device
    "temperature": ("temperature",),
    "power": ("power",),
    "power_limit": ("power_limit",),
    "sm_clock": ("sm_clock",),
    "pcie": ("pcie_tx", "pcie_rx"),
}


@dataclass
class _Counter:
    """Last value of a monotonic counter, to turn it into a rate."""

    value: int | None = None
    time_us: int | None = None


@dataclass
class _DeviceState:
    handle: object  # what memory, utilization and processes are read from (a MIG device's)
    gpu_handle: object  # the GPU's: power, temperature, clocks and PCIe are the whole GPU's
    pcie: dict[int, _Counter] = field(default_factory=dict)
    last_sample_us: int = 0
    last_process_sample_us: int = 0  # the newest per-process utilization sample taken
    accounting: bool = False  # the driver's per-process accounting is on (read at start)
    # this device's values as the last read left them: each tick copies them and fills in
    # what it reads, so what slower cadences read is carried
    values: list[float | None] = field(default_factory=lambda: [None] * len(FAST_METRICS))
    reads: DeviceReads | None = None  # its fast calls bound once, while they may be made so
    reads_at: int = -1  # the library's ``changes`` when ``reads`` was made


class NvmlSource:
    """Per-device NVML readings; never raises, missing values are ``None``."""

    name = SOURCE
    label = LABEL
    metrics = METRICS

    def __init__(self, module: ModuleType | None = None) -> None:
        self.library = NvmlLibrary(module)
        self.devices: list[GpuDevice] = []
        # per NVML index, its MIG devices (None: MIG mode off), this kernel's among them or not
        self.mig_devices: list[list[MigDevice] | None] = []
        self._state: list[_DeviceState] = []
        self.mapping_note = ""
        self._pid = os.getpid()
        # How long NVML keeps its callers waiting (monotonic seconds; 0.0: no call waits): the
        # sampler's read, another thread's ask (one at a time: BoundedCall), and how long the
        # last of them to return took. Plain attributes: the tick pays two clock reads.
        self.reading_since = 0.0
        self.asking_since = 0.0
        self.last_took = 0.0

    # -- setup ----------------------------------------------------------------------------
    def open(self) -> bool:
        """Start NVML and list the devices; False (with ``status``) when there is no NVML."""
        start = self.reading_since = time.monotonic()
        try:
            return self._open()
        finally:
            self.last_took, self.reading_since = time.monotonic() - start, 0.0

    def _open(self) -> bool:
        lib = self.library
        if not lib.init():
            return False
        count = lib.call_first(("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"))
        handles = []
        for i in range(count if isinstance(count, int) else 0):
            handle = lib.call_first(
                ("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"), i, device=i
            )
            if handle is NA:
                break  # keep NVML indices dense: a device we can't open ends the list
            handles.append(handle)
        uuids = [
            _text(lib.query("nvmlDeviceGetUUID", h, device=i)) or f"unknown-{i}"
            for i, h in enumerate(handles)
        ]
        self.mig_devices = [mig_devices(lib, h) for h in handles]
        view = cuda_view(uuids, self.mig_devices, os.environ.get("CUDA_VISIBLE_DEVICES"))
        self.mapping_note = view.note
        self._state, self.devices = [], []
        for i, h in enumerate(handles):
            name = _text(lib.query("nvmlDeviceGetName", h, device=i)) or "unknown GPU"
            total = _attr(lib.query("nvmlDeviceGetMemoryInfo", h, device=i), "total")
            device = GpuDevice(i, name, uuids[i], total, view.cuda.get(i))
            migs = self.mig_devices[i]
            if i in view.mig and migs:  # the kernel's MIG device stands for its GPU
                device = _on_mig(device, migs[view.mig[i]])
                self._state.append(_DeviceState(migs[view.mig[i]].handle, h))
            else:
                self._state.append(_DeviceState(h, h))
            self.devices.append(device)
            # (asked, not queried: accounting off or unsupported is an answer, not a fault)
            self._state[-1].accounting = lib.probe("nvmlDeviceGetAccountingMode", h) == 1
        self.read_slow()
        return True

    def remap_cuda(self, cuda_uuids: list[str]) -> None:
        """Replace the assumed CUDA mapping by the exact one the framework reports."""
        if not cuda_uuids:
            return
        mapping = map_by_uuid([d.uuid for d in self.devices], cuda_uuids)
        if not mapping and any(d.mig for d in self.devices):
            return  # a MIG device's UUID as this framework words it: keep what the variable says
        self.devices = [
            dataclasses.replace(d, cuda_index=mapping.get(d.index)) for d in self.devices
        ]
        self.mapping_note = ""

    def close(self) -> None:
        self.library.shutdown()

    def facts(self) -> DeviceFacts:
        lib = self.library
        return DeviceFacts(lib.driver_version, frozenset(lib.lost_devices))

    @property
    def binding_version(self) -> str | None:
        return self.library.binding_version

    @property
    def available(self) -> bool:
        return self.library.available

    def not_started(self, reason: str) -> None:
        self.library.reason = reason

    def disabled_reads(self) -> dict[tuple[int, str], str]:
        return self.library.disabled_metrics()

    def call_counts(self) -> tuple[int, int]:
        return self.library.calls, self.library.gil_kept_calls

    def unavailable(self, index: int) -> tuple[str, ...]:
        """The metrics NVML cannot give for a device (a read it answered NotSupported to, or
        lacks), in registry order: what a chart should not draw as a line of no values."""
        off = {
            name
            for (device, read) in self.library.disabled_metrics()
            if device == index
            for name in _READS.get(read, ())
        }
        return tuple(name for name in FAST_METRICS if name in off)

    @property
    def status(self) -> str:
        lib = self.library
        if not lib.available:
            return lib.reason or "NVML not started"
        if not self.devices:
            return "NVML found no GPU"
        lost = sorted(lib.lost_devices)
        if lost:
            return "GPU lost: " + ", ".join(f"gpu{i}" for i in lost) + " (reset or reboot needed)"
        return "ok"

    def not_answering_for(self, now: float | None = None) -> float:
        """Seconds NVML has kept a caller waiting, when that is over NOT_ANSWERING_AFTER or its
        last answer took that long (a driver in a bad state); 0.0 while it answers."""
        now = time.monotonic() if now is None else now
        waited = max((now - s for s in (self.reading_since, self.asking_since) if s), default=0.0)
        if waited > NOT_ANSWERING_AFTER or self.last_took > NOT_ANSWERING_AFTER:
            return max(waited, self.last_took)
        return 0.0

    # -- the tick -------------------------------------------------------------------------
    def columns(self) -> list[str]:
        return columns_for(self.metrics, [d.index for d in self.devices])

    def read(self, due: frozenset[str] = EVERY) -> list[float | None]:
        """Every device's FAST_METRICS, flattened device-major.

        Memory and utilization are read on every call: two NVML calls a device (memory alone
        with ``REPEAT`` due, utilization carried: see STEADY_PERIOD). With ``DETAIL`` due,
        temperature, power, SM clock and PCIe rates are refreshed too, and with ``SLOW`` the
        power limit; otherwise their last values are carried. (The process list is the process
        source's: ``read_processes``.)
        """
        start = self.reading_since = time.monotonic()  # (inline: a call costs a tick µs)
        try:
            if SLOW in due:
                self.read_slow()
            details = DETAIL in due
            fresh = REPEAT not in due  # utilization too (else the last reading stays in the row)
            changes = self.library.changes
            row: list[float | None] = []
            for i, state in enumerate(self._state):
                if details:
                    self._read_details(i, state)
                reads = state.reads
                # Most ticks: the bound calls, made here rather than in a call of their own (a
                # Python call costs microseconds on the cold cache a tick wakes to).
                code = reads.call(fresh) if reads is not None and state.reads_at == changes else -1
                if not code:
                    values = state.values
                    memory = reads.memory  # type: ignore[union-attr]
                    values[_MEM_USED], values[_MEM_RESERVED] = memory.used, memory.reserved
                    values[_MEM_TOTAL] = memory.total
                    if fresh:
                        util = reads.util  # type: ignore[union-attr]
                        values[_GPU_UTIL], values[_MEM_UTIL] = util.gpu, util.memory
                    row += values
                else:
                    row += self._read_device(i, state, code, fresh)
            return row
        finally:
            self.last_took, self.reading_since = time.monotonic() - start, 0.0

    def _read_device(
        self, i: int, state: _DeviceState, code: int, fresh: bool = True
    ) -> list[float | None]:
        """The fast metrics read now, when the bound calls failed with ``code`` or (-1) were
        not made (none, or made before :attr:`NvmlLibrary.changes` moved); the slower ones as
        their last reads left them, and utilization too unless ``fresh``."""
        lib, values = self.library, state.values
        if code < 0:
            state.reads = lib.device_reads(i, state.handle, _MEMORY_V2)
            state.reads_at = lib.changes
            code = state.reads.call(fresh) if state.reads is not None else -1
        reads = state.reads
        if reads is not None and not code:
            _put_memory(values, reads.memory)
            if fresh:  # (a DeviceReads just made holds no utilization reading yet)
                values[_GPU_UTIL], values[_MEM_UTIL] = reads.util.gpu, reads.util.memory
            return values
        if reads is not None and code > 0:
            lib.held_call_failed(reads, code, i)  # recorded as query would: not asked again
            if reads.failed == "utilization":  # (memory answered)
                _put_memory(values, reads.memory)
                values[_GPU_UTIL] = values[_MEM_UTIL] = None
                return values
        # Through query, which records a failure (and disables a metric, marks a GPU lost);
        # memory's v2 not again when the bound call just failed.
        used, reserved, total = self._memory(i, state, v2=code < 0)
        values[_MEM_USED], values[_MEM_RESERVED], values[_MEM_TOTAL] = used, reserved, total
        if not fresh:
            return values
        util = lib.query(
            "nvmlDeviceGetUtilizationRates", state.handle, device=i, metric="utilization"
        )
        if util is NA:
            values[_GPU_UTIL] = values[_MEM_UTIL] = None
        else:
            values[_GPU_UTIL], values[_MEM_UTIL] = util.gpu, util.memory
        return values

    def _memory(
        self, i: int, state: _DeviceState, v2: bool = True, release_gil: bool = False
    ) -> tuple[int | None, int | None, int | None]:
        """(used, reserved, total) bytes: v2 (as nvidia-smi counts "used"), else v1."""
        lib, h, free = self.library, state.handle, release_gil
        if v2:
            mem = lib.query(
                "nvmlDeviceGetMemoryInfo", h, _MEMORY_V2, device=i, metric="memory_v2",
                release_gil=free,
            )  # fmt: skip
            if mem is not NA:
                return mem.used, mem.reserved, mem.total
        mem = lib.query("nvmlDeviceGetMemoryInfo", h, device=i, metric="memory", release_gil=free)
        return (None, None, None) if mem is NA else (mem.used, None, mem.total)

    def _read_details(self, i: int, state: _DeviceState) -> None:
        lib, h = self.library, state.gpu_handle
        temp = lib.query(
            "nvmlDeviceGetTemperature", h, _TEMPERATURE_GPU, device=i, metric="temperature"
        )
        power_mw = lib.query("nvmlDeviceGetPowerUsage", h, device=i, metric="power")
        clock = lib.query("nvmlDeviceGetClockInfo", h, _CLOCK_SM, device=i, metric="sm_clock")
        tx, rx = self._pcie_rates(i, state)
        read = (
            None if temp is NA else temp,
            None if power_mw is NA else power_mw / 1000.0,
            None if clock is NA else clock,
            tx,
            rx,
        )
        for name, value in zip(_DETAILS, read, strict=True):
            state.values[_AT[name]] = value

    def _pcie_rates(self, i: int, state: _DeviceState) -> tuple[float | None, float | None]:
        # Counter fields, differenced: nvmlDeviceGetPcieThroughput blocks for 20 ms.
        values = self.library.query(
            "nvmlDeviceGetFieldValues",
            state.gpu_handle,
            [_FI_PCIE_TX_BYTES, _FI_PCIE_RX_BYTES],
            device=i,
            metric="pcie",
        )
        if values is NA:
            return None, None
        rates: list[float | None] = []
        for field_id, value in zip((_FI_PCIE_TX_BYTES, _FI_PCIE_RX_BYTES), values, strict=True):
            counter = state.pcie.get(field_id)
            if counter is None:
                counter = state.pcie[field_id] = _Counter()
            rates.append(_rate(counter, value))
        return rates[0], rates[1]

    # -- asked off the sampler's thread (through BoundedCall: the GIL released) ------------
    def read_memory(self) -> list[int | None]:
        """NVML memory used per device, in bytes (the ledger's before/after reading)."""
        start = self.asking_since = time.monotonic()
        try:
            return [self._memory(i, s, release_gil=True)[0] for i, s in enumerate(self._state)]
        finally:
            self.last_took, self.asking_since = time.monotonic() - start, 0.0

    def read_mig_used(self, migs: list[MigDevice]) -> list[int | None]:
        """MIG devices' memory in use now, in bytes (for status: a GPU's other MIG devices,
        which are not sampled)."""
        start = self.asking_since = time.monotonic()
        try:
            return [
                _attr(self.library.query("nvmlDeviceGetMemoryInfo", m.handle, release_gil=True),
                      "used")
                for m in migs
            ]  # fmt: skip
        finally:
            self.last_took, self.asking_since = time.monotonic() - start, 0.0

    def read_free(self) -> list[int | None]:
        """NVML free memory per device now, in bytes (what another allocation could get)."""
        start = self.asking_since = time.monotonic()
        out: list[int | None] = []
        try:
            for i, state in enumerate(self._state):
                used, reserved, total = self._memory(i, state, release_gil=True)
                free = None if used is None or total is None else total - used - (reserved or 0)
                out.append(free)
            return out
        finally:
            self.last_took, self.asking_since = time.monotonic() - start, 0.0

    # -- the slow cadence -----------------------------------------------------------------
    def read_slow(self) -> None:
        """Values that change rarely; carried into every fast row."""
        self.library.retry_kept_calls()  # (a slow spell of the driver's that has passed)
        for i, state in enumerate(self._state):
            limit = self.library.query(
                "nvmlDeviceGetEnforcedPowerLimit", state.gpu_handle, device=i, metric="power_limit"
            )
            state.values[_AT["power_limit"]] = None if limit is NA else limit / 1000.0

    def read_processes(self) -> list[GpuProcess]:
        """Compute processes on every device, this kernel's marked (who the others are is
        the process source's to say)."""
        found: list[GpuProcess] = []
        for i, state in enumerate(self._state):
            procs = self.library.call_first(
                (
                    "nvmlDeviceGetComputeRunningProcesses_v3",
                    "nvmlDeviceGetComputeRunningProcesses_v2",
                    "nvmlDeviceGetComputeRunningProcesses",
                ),
                state.handle,
                device=i,
                metric="processes",
            )
            for p in procs if isinstance(procs, list) else []:
                pid = getattr(p, "pid", None) or None  # 0 means hidden by a PID namespace
                used = getattr(p, "usedGpuMemory", None)
                found.append(
                    GpuProcess(
                        index=i,
                        pid=pid,
                        used_memory=used if isinstance(used, int) and used < 2**63 else None,
                        is_this_kernel=pid == self._pid,
                    )
                )
        return found

    def read_process_utilization(self) -> list[ProcessUtil]:
        """Per-process SM utilization samples (the driver's, ~every 1/6 s) since the last call."""
        found: list[ProcessUtil] = []
        for i, state in enumerate(self._state):
            got = self.library.query(
                "nvmlDeviceGetProcessUtilization",
                state.handle,
                state.last_process_sample_us,
                device=i,
                metric="process_utilization",
            )  # (NotFound: no sample since then, a missing value)
            for sample in got if isinstance(got, list) else []:
                stamp, pid = int(getattr(sample, "timeStamp", 0)), getattr(sample, "pid", 0)
                if stamp > state.last_process_sample_us and pid:
                    sm = getattr(sample, "smUtil", None)
                    if isinstance(sm, (int, float)) and 0 <= sm <= 100:
                        found.append(ProcessUtil(i, int(pid), stamp / 1e6, float(sm)))
            newest = max((int(u.time * 1e6) for u in found if u.index == i), default=0)
            state.last_process_sample_us = max(state.last_process_sample_us, newest)
        return found

    def accounted_peak(self, index: int, pid: int) -> int | None:
        if not 0 <= index < len(self._state) or not self._state[index].accounting:
            return None
        stats = self.library.query(
            "nvmlDeviceGetAccountingStats",
            self._state[index].handle,
            pid,
            device=index,
            metric="accounting_stats",
        )
        peak = getattr(stats, "maxMemoryUsage", None) if stats is not NA else None
        return peak if isinstance(peak, int) and 0 <= peak < 2**63 else None

    def notes(self) -> list[str]:
        """What to know about the NVML binding, for status (the shadowing check costs ~30 ms:
        asked then, not at start)."""
        shadow = shadowing_note()
        return [*self.library.notes, *([shadow] if shadow else [])]

    def read_util_samples(self) -> list[list[tuple[float, float]]]:
        """Per device, the driver's buffered GPU-utilization samples since the last call.

        Each is (unix time in seconds, percent). The driver samples every ~200 ms and keeps
        ~14 s, so a call every few seconds misses nothing between ticks.
        """
        out: list[list[tuple[float, float]]] = []
        for i, state in enumerate(self._state):
            got = self.library.query(
                "nvmlDeviceGetSamples",
                state.handle,
                _GPU_UTILIZATION_SAMPLES,
                state.last_sample_us,
                device=i,
                metric="util_samples",
            )
            samples: list[tuple[float, float]] = []
            if got is not NA:
                for s in got[1]:
                    stamp = int(getattr(s, "timeStamp", 0))
                    if stamp > state.last_sample_us:
                        samples.append((stamp / 1e6, float(_sample_value(s))))
                if samples:
                    state.last_sample_us = int(samples[-1][0] * 1e6)
            out.append(samples)
        return out


def _on_mig(gpu: GpuDevice, mig: MigDevice) -> GpuDevice:
    """``gpu`` as the kernel sees it: the MIG device ``mig`` of it."""
    part = MigPart(gpu.name, gpu.uuid, mig.profile, mig.gpu_instance, mig.compute_instance)
    return dataclasses.replace(
        gpu, name=mig.name, uuid=mig.uuid, memory_total=mig.memory_total, mig=part
    )


def _put_memory(values: list[float | None], memory: object) -> None:
    values[_MEM_USED] = memory.used  # type: ignore[attr-defined]
    values[_MEM_RESERVED] = memory.reserved  # type: ignore[attr-defined]
    values[_MEM_TOTAL] = memory.total  # type: ignore[attr-defined]


def _rate(counter: _Counter, value: object) -> float | None:
    if getattr(value, "nvmlReturn", 1) != _SUCCESS:
        return None
    raw = int(value.value.ullVal)
    stamp = int(getattr(value, "timestamp", 0)) or int(time.time() * 1e6)
    rate = None
    if counter.value is not None and counter.time_us is not None and stamp > counter.time_us:
        delta = raw - counter.value
        if delta >= 0:  # a reset counter gives one missing value, not a negative rate
            rate = delta / ((stamp - counter.time_us) / 1e6)
    counter.value, counter.time_us = raw, stamp
    return rate


def _sample_value(sample: object) -> float:
    value = sample.sampleValue
    for name in ("uiVal", "ulVal", "ullVal", "dVal"):
        v = getattr(value, name, None)
        if v is not None:
            return v
    return float("nan")


def _attr(obj: object, name: str) -> int | None:
    if obj is NA:
        return None
    value = getattr(obj, name, None)
    return int(value) if value is not None else None


def _text(value: object) -> str | None:
    if value is NA or value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
