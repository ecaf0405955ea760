"""The NVML device source reads the device's view (memory, utilization, power, clocks, PCIe, other
processes)."""

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
from .metrics import LABEL, METRICS, ROWS, SOURCE
from .mig_devices import MigDevice, mig_devices
from .reads import BoundQuery, Reader
from .rows import CadenceRead, layout

# NVML constants used here, by value, so that the code reads the same with any binding version.
_GPU_UTILIZATION_SAMPLES = 1
_MEMORY_V2 = 0x02000028  # nvmlMemory_v2: adds "reserved" (driver/firmware-held memory)
# A read this slow means the driver is not answering (a healthy one answers in microseconds to
# a few milliseconds): views say so, and the main thread stops asking (seconds).
NOT_ANSWERING_AFTER = 0.5

EVERY = frozenset(CADENCES)
# What the bound calls of read() fill on every tick; every other metric is a row's, read at its
# cadence by its reader. The rows' tables, made once here: the tick reads module constants.
_BOUND = ("mem_used", "mem_reserved", "mem_total", "gpu_util", "mem_util")
_LAYOUT = layout(ROWS, frozenset(_BOUND))
FAST_METRICS = _LAYOUT.names  # one device's values in a row, in this order
_MEM_USED, _MEM_RESERVED, _MEM_TOTAL, _GPU_UTIL, _MEM_UTIL = (_LAYOUT.at[n] for n in _BOUND)
_OFF_WITH = _LAYOUT.off_with  # a disabled read -> the metrics it leaves without a value
# A cadence's read bound to one GPU: its reader, what it asks through, where its values go.
_BoundRead = tuple[Reader, BoundQuery, tuple[int, ...]]


@dataclass
class _DeviceState:
    handle: object  # what memory, utilization and processes are read from (a MIG device's)
    gpu_handle: object  # the GPU's: power, temperature, clocks and PCIe are the whole GPU's
    # its detail and slow cadences' reads, each bound to the GPU once (_bind)
    detail: tuple[_BoundRead, ...] = ()
    slow: tuple[_BoundRead, ...] = ()
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
            own = h
            if i in view.mig and migs:  # the kernel's MIG device stands for its GPU
                device = _on_mig(device, migs[view.mig[i]])
                own = migs[view.mig[i]].handle
            detail, slow = _bind(lib, i, h, _LAYOUT.detail), _bind(lib, i, h, _LAYOUT.slow)
            self._state.append(_DeviceState(own, h, detail, slow))
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
            for name in _OFF_WITH.get(read, ())
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
        with ``REPEAT`` due, utilization carried: see STEADY_PERIOD). With ``DETAIL`` due, the
        metrics whose rows say DETAIL are read too (temperature, power, SM clock, PCIe rates),
        and with ``SLOW`` those whose rows say SLOW (the power limit); otherwise their last
        values are carried. (The process list is the process source's: ``read_processes``.)
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
                    _read_into(state.values, state.detail)
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
        for state in self._state:
            _read_into(state.values, state.slow)

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


def _bind(
    lib: NvmlLibrary, index: int, gpu_handle: object, reads: tuple[CadenceRead, ...]
) -> tuple[_BoundRead, ...]:
    return tuple((r.reader, BoundQuery(lib, index, gpu_handle, r.read), r.slots) for r in reads)


def _read_into(values: list[float | None], reads: tuple[_BoundRead, ...]) -> None:
    """Make ``reads`` (a device's, at one cadence) and put what they give in ``values``: a
    read's one value, or one a slot where rows share it."""
    for reader, ask, slots in reads:
        got = reader(ask)
        if len(slots) == 1:
            values[slots[0]] = got
        else:
            for slot, value in zip(slots, got, strict=True):
                values[slot] = value


def _put_memory(values: list[float | None], memory: object) -> None:
    values[_MEM_USED] = memory.used  # type: ignore[attr-defined]
    values[_MEM_RESERVED] = memory.reserved  # type: ignore[attr-defined]
    values[_MEM_TOTAL] = memory.total  # type: ignore[attr-defined]


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
