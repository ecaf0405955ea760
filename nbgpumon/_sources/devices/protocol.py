"""What a device source offers: a small core every source has and optional roles a source may leave
out. The core is its devices, a reading, status and what it cannot give; the roles are MIG devices,
the processes on a device, library call counts, how long it keeps a caller waiting, what status
tells of its library, and the exact CUDA numbering.

NVML's source (``devices/nvml/``) is one implementation, with every role; the session, the ledger,
status, headroom and the post-mortem ask a :class:`DeviceSource`, never NVML by name, and ask for a
role with :func:`role` once, when the session starts: where a source has none, nothing of that
role is shown (no process list, no MIG lines, no call counts in the sampler's cost, no library
notes) or it is taken as the simplest case (always answering; CUDA numbers its devices as it does).
A device source's per-GPU metrics are registered in the registry's DEVICE group under its ``name``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable


@dataclass(frozen=True, slots=True)
class MigPart:
    """Where a MIG device is: its GPU, its instances and its profile."""

    gpu_name: str  # the GPU's ("NVIDIA H200"), where the device's own name adds the profile
    gpu_uuid: str  # the GPU's "GPU-…" (DCGM's UUID label of an instance)
    profile: str  # "1g.18gb"
    gpu_instance: int | None
    compute_instance: int | None


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One GPU as its device source and CUDA see it: for a GPU in MIG mode, the MIG device
    this kernel runs on, where there is one (its name, UUID and memory; ``mig`` says where)."""

    index: int  # the device source's own (physical) numbering: timeline columns use it
    name: str
    uuid: str
    memory_total: int | None  # bytes
    cuda_index: int | None  # None when CUDA_VISIBLE_DEVICES hides it from this process
    mig: MigPart | None = None


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process on a GPU. ``pid`` is None where a PID namespace hides it."""

    index: int  # its GPU's :attr:`GpuDevice.index`
    pid: int | None
    used_memory: int | None  # bytes; None where the driver won't say
    is_this_kernel: bool


@dataclass(frozen=True, slots=True)
class ProcessUtil:
    """One of the driver's per-process utilization samples."""

    index: int  # its GPU's :attr:`GpuDevice.index`
    pid: int
    time: float  # unix seconds
    sm: float  # percent of the sample period a kernel of this process ran


@runtime_checkable
class DeviceSource(Protocol):
    """A source of per-GPU figures, the core every device source has. It is a timeline source
    (``name``, ``metrics``, ``columns()``, ``read(due)``: see ``_sources.base``) that also says what
    it is and what it can't read. It never raises: what it cannot read is None, and
    ``status``/``unavailable`` say why. The roles below are optional."""

    name: str  # the registry's source name: its columns' middle part (``gpu0.<name>.mem_used``)
    label: str  # how users write it, in the words views show ("NVML")
    metrics: tuple[Any, ...]
    devices: list[GpuDevice]  # dense by ``index``; empty: no GPU (``status`` says why)

    # -- identity and status --------------------------------------------------------------
    @property
    def available(self) -> bool:
        """Whether it started (its library loaded and answered)."""
        ...

    @property
    def status(self) -> str:
        """ "ok", or why there are no figures (no driver, no GPU, a GPU lost)."""
        ...

    def facts(self) -> DeviceFacts:
        """What status and a recording say of the source itself: its driver, lost devices."""
        ...

    def unavailable(self, index: int) -> tuple[str, ...]:
        """The metrics it cannot give for device ``index``, in registry order."""
        ...

    # -- lifecycle ------------------------------------------------------------------------
    def open(self) -> bool:
        """Start and list the devices; False (with ``status``) when there is nothing to read."""
        ...

    def close(self) -> None: ...

    def not_started(self, reason: str) -> None:
        """Never to be opened: ``status`` says ``reason`` (a start that did not answer)."""
        ...

    # -- the tick and the asks (off the sampler's thread, bounded by a deadline) -----------
    def columns(self) -> list[str]: ...

    def read(self, due: frozenset[str] = ...) -> list[float | None]: ...

    def read_memory(self) -> list[int | None]:
        """Device memory used per device now, bytes (a cell's start and end readings)."""
        ...

    def read_free(self) -> list[int | None]:
        """Device memory free per device now, bytes (what another allocation could get)."""
        ...


# -- optional roles: a source has one when it has its members ------------------------------
@runtime_checkable
class MigRole(Protocol):
    """A source that knows GPUs split into MIG devices (status lists a GPU's others)."""

    # per device index, its MIG devices (each with ``name``, ``uuid``, ``profile``,
    # ``gpu_instance``, ``compute_instance``, ``memory_total``); None where MIG mode is off
    mig_devices: list[list[Any] | None]

    def read_mig_used(self, migs: Sequence[Any]) -> list[int | None]:
        """Memory in use on each of ``migs`` (entries of ``mig_devices``), bytes."""
        ...


@runtime_checkable
class ProcessRole(Protocol):
    """A source that lists the processes on its devices (the sampler's thread, at the
    process cadence): who holds memory, this kernel's children's figures."""

    def read_processes(self) -> list[GpuProcess]:
        """The compute processes on every device now, this kernel's marked."""
        ...

    def read_process_utilization(self) -> list[ProcessUtil]:
        """The driver's per-process utilization samples since the last call, every device."""
        ...

    def accounted_peak(self, index: int, pid: int) -> int | None:
        """The driver's exact peak memory of ``pid`` on device ``index``, bytes, where its
        accounting is on (it keeps exited processes' too); else None."""
        ...


@runtime_checkable
class CallCountRole(Protocol):
    """A source that counts its library calls (the sampler's cost says how many)."""

    def call_counts(self) -> tuple[int, int]:
        """Library calls made so far by any thread, and how many of them kept the GIL."""
        ...


@runtime_checkable
class HangWatchRole(Protocol):
    """A source that times its own calls, so that a driver keeping its callers waiting is told
    (status says so; the main thread stops waiting on it until it answers). A source without it
    is taken as always answering: each ask is still bounded by ``DeviceAsk``'s deadline."""

    def not_answering_for(self, now: float | None = None) -> float:
        """Seconds it has kept a caller (a read or an ask) waiting, once that is too long;
        0.0 while it answers. ``now``: ``time.monotonic()``, where the caller has it."""
        ...


@runtime_checkable
class DiagnosticsRole(Protocol):
    """A source that tells ``%gpumon status`` about its library: its binding, what to know,
    the reads it stopped making."""

    @property
    def binding_version(self) -> str | None:
        """Its library binding's version, None where it cannot tell (may cost ms)."""
        ...

    def notes(self) -> list[str]:
        """Things to know about the source (may cost milliseconds)."""
        ...

    def disabled_reads(self) -> dict[tuple[int, str], str]:
        """(device index, read) -> why: the reads it stopped making on a device."""
        ...


@runtime_checkable
class CudaMappingRole(Protocol):
    """A source whose own device numbering may differ from CUDA's (``GpuDevice.cuda_index``),
    worked out at its start and made exact once a framework reports its devices' UUIDs. A
    source without it has numbered its devices as CUDA does."""

    mapping_note: str  # how the CUDA numbering was worked out, where that needs saying ("")

    def remap_cuda(self, cuda_uuids: list[str]) -> None:
        """The exact CUDA numbering, from the UUIDs a framework reports in its own order."""
        ...


R = TypeVar("R")
_ABSENT = object()


def role(source: object, kind: type[R]) -> R | None:
    """``source`` as a ``kind`` (one of the roles above) where it has every member of that role,
    else None. Members are looked up, never run (``isinstance`` would run a property, which may
    cost milliseconds); still, ask once, when a session starts, never on a tick or a cell."""
    members = {*vars(kind).get("__annotations__", {}), *(n for n in vars(kind) if n[0] != "_")}
    found = all(inspect.getattr_static(source, n, _ABSENT) is not _ABSENT for n in members)
    return source if found else None  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """A device source's own facts, for ``%gpumon status`` and a recording's session."""

    driver_version: str | None
    lost_devices: frozenset[int]  # device indices that fell off the bus
