"""What a view says about a session's machinery, as facts read at one instant. They cover the
sampler and its cadences, the devices and what is unavailable and why, each framework, the
recording, the exporter, tracing and NVTX, the processes on the GPUs. The words are the
views' (``_views/status/session_status.py``); strings here are the sources' own (a source's
status, a failure's message), never sentences made for a view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._forensics.tracing_answer import TracingState
from ..._recording.notices import RecorderState
from ..._recording.salvage import Damage
from ..._sampling.sampler_cost import CostReport
from ..cell_clock import CellPathCost
from ..device_open import LateStart
from .devices import Device
from .nvtx import NvtxState


@dataclass(frozen=True, slots=True)
class SamplerFacts:
    """The sampler thread and its cadences, seconds."""

    interval: float  # memory (the fast tick)
    steady_period: float  # utilization and RSS: every tick, or this often when ticks are faster
    allocator_interval: float
    detail_interval: float  # the device source's detail metrics (power, temperature, ...)
    slow_interval: float  # its slow ones, and the process lists
    ticks: int
    last_tick_seconds: float
    cost: CostReport  # what the sampler thread took
    error: str  # "" when none
    process_interval: float = 0.2  # this kernel's children (and, while it has any, processes)
    idle_interval: float = 0.0  # between ticks while nothing moves (0: always ``interval``)
    quiet_share: float = 0.0  # of the time it ran, the fraction it waited ``idle_interval``


@dataclass(frozen=True, slots=True)
class OtherMig:
    """A MIG device of a GPU that is not this kernel's, with its memory in use now."""

    key: str  # "gpu0-mig2"
    name: str  # its profile ("1g.18gb"), else its name
    uuid: str
    memory_total: int | None
    used: int | None  # bytes, None where the read has none
    used_read: bool  # False: not asked (only the main thread asks), or the ask failed


@dataclass(frozen=True, slots=True)
class GpuFacts:
    """One device of the device source, as status tells of it."""

    device: Device
    lost: bool  # fell off the bus
    mig_mode: bool  # the GPU is in MIG mode
    other_migs: tuple[OtherMig, ...] = ()  # in MIG mode: its MIG devices but this kernel's


@dataclass(frozen=True, slots=True)
class DeviceSourceFacts:
    """The device source (NVML, or another) and its devices."""

    label: str  # how users write it ("NVML")
    status: str  # "ok", or why it reads nothing (its own words)
    available: bool  # its facts (driver, lost devices) could be read
    driver_version: str | None
    binding_version: str | None
    gpus: tuple[GpuFacts, ...]
    unavailable: tuple[tuple[int, str, str], ...]  # (device index, metric, why), sorted
    mapping_note: str  # how its numbering maps onto CUDA's, where that needs saying
    notes: tuple[str, ...]  # its own notes
    started_late: LateStart | None  # a device source still starting at load, and how it went
    silent_for: float  # seconds a read has been waiting on the driver; 0.0 when none
    source: str = ""  # its registry name: its metrics are the registry's DEVICE group's
    # its metrics read at the detail and at the slow cadence (names, in registry order)
    detail: tuple[str, ...] = ()
    slow: tuple[str, ...] = ()
    lists_processes: bool = True  # it has the process role (lists read at the slow cadence)
    tells_library: bool = True  # it has the diagnostics role (its binding, notes, reads stopped)


@dataclass(frozen=True, slots=True)
class AllocatorOnDevice:
    """A framework's allocator on one CUDA device, bytes."""

    cuda_index: int
    allocated: int
    reserved: int
    limit: int | None


@dataclass(frozen=True, slots=True)
class FrameworkFacts:
    """A framework plug-in's state in this kernel."""

    name: str  # "torch"
    label: str  # "torch"
    listed_before_import: bool  # the status bar names it even before it is imported
    status: str  # its source's status: why it is not read ("torch not imported")
    active: tuple[AllocatorOnDevice, ...] | None  # None: not active (``status`` says why)
    peak_note: str  # the plug-in's own note on its peaks, when active


@dataclass(frozen=True, slots=True)
class ProcessFacts:
    """A compute process on a device."""

    key: str  # its device's key ("gpu0", "gpu0-mig1")
    pid: int | None  # None where a PID namespace hides it
    name: str
    is_this_kernel: bool
    used_memory: int | None  # bytes
    is_child: bool = False  # started by this kernel (or by a process it started)
    started_by: int | None = None  # a child's: the execution count of the cell that started it
    rank: int | None = None  # a job's worker's RANK
    job: str = ""
    other_user: bool = False  # another user's: nothing more is said
    kernel: Any = None  # another Jupyter kernel's identity (notebook, kernel id, idle seconds)


@dataclass(frozen=True, slots=True)
class ExporterFacts:
    """Where the Prometheus exporter serves and what it has served."""

    url: str
    scrapes: int
    failed_requests: int
    last_error: str  # the last scrape's failure, "" when it served


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """A live session's machinery."""

    sampler: SamplerFacts
    devices: DeviceSourceFacts
    frameworks: tuple[FrameworkFacts, ...]  # in registration order
    tracing: TracingState  # on, armed or off, with the last problem if any
    traced_by: tuple[str, ...]  # what each plug-in that records memory history calls it
    nvtx: NvtxState  # the NVTX cell ranges' state
    host: str  # the host source's status
    host_peak_exact: bool  # the per-cell host peak is VmHWM's (else sampled)
    peak_mode: str  # "reset" or "preserve"
    reset_means: tuple[str, ...]  # each plug-in's words on what resetting does to its users
    preserve_means: tuple[str, ...]  # ... and on what preserving means
    recording: RecorderState | None  # what the recorder is doing, None when not recording
    exporter: ExporterFacts | None  # what the exporter serves, None when it is off
    summary: bool  # a summary line after each cell
    records: int  # in the ledger
    cell_path: CellPathCost | None = None  # what the last cells' start and end cost; None: none yet


@dataclass(frozen=True, slots=True)
class RecordedStatus:
    """A recording read back."""

    source: str  # "run.sqlite (session 2)"
    samples: int  # raw samples
    buckets: int  # buckets of the older ones
    damage: Damage | None  # what could not be read, None for a whole file
    host: str
    driver: str
    devices: tuple[Device, ...]


@dataclass(frozen=True, slots=True)
class Status:
    """What a view says about the session's machinery, read at one instant: ``live`` for a
    live session, ``recorded`` for a recording."""

    state: str  # "sampling", "stopped", "closed" or "recorded"
    interval: float  # seconds between samples (as configured, or as recorded)
    live: LiveStatus | None = None
    recorded: RecordedStatus | None = None
    processes: tuple[ProcessFacts, ...] = ()  # processes on the GPUs now
