"""What every source is, and what the ledger asks of an allocator source.

A **source** reads numbers for one instant: its metrics (registry entries), one value per
column, in :meth:`Source.columns` order. The sampler calls :meth:`Source.read` every tick with
the cadences that are due; a source reads what is due and carries its last values for the
rest, so a slow read (NVML's PCIe counters, the process list) never runs on every tick. A source
never raises (a failed read is a missing value plus ``status``), keeps no history, starts no
thread and knows nothing of IPython.

An **allocator source** (torch, JAX, CuPy) is a framework's own view of its GPU memory, read per
CUDA device, and only once the user's code has initialised that framework on that device.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from .._foundation.metrics import Metric

# Cadence classes, fastest first. The sampler's settings say how often each comes due.
FAST = "fast"  # every tick: memory, utilization, RSS (a few µs a device)
ALLOCATOR = "allocator"  # a framework's allocator counters (~25 µs a device)
DETAIL = "detail"  # temperature, power, clock, PCIe counters (~160 µs a device)
SLOW = "slow"  # power limit, processes, system memory (a process list can take ms)
CADENCES = (FAST, ALLOCATOR, DETAIL, SLOW)
# Beside FAST on a tick faster than STEADY_PERIOD that is not due to refresh what changes more
# slowly than memory: utilization (NVML's is an average over its own sample period, 1/6 s to
# 1 s, so read at 100 Hz nine reads in ten repeat the last) and the RSS (the cell's host peak
# is exact from VmHWM either way). Sources may carry those values on such a tick.
REPEAT = "repeat"
STEADY_PERIOD = 0.1  # seconds: utilization and RSS are read at most about this often


class Source(Protocol):
    """A reader of one instant's numbers for the timeline."""

    name: str  # the registry's source name: "nvml", "torch", "host"
    metrics: tuple[Metric, ...]  # what it reads, in registry order

    @property
    def status(self) -> str:
        """ "ok", or why values are missing, as one line."""
        ...

    def columns(self) -> list[str]:
        """The timeline columns it fills, in the order :meth:`read` returns them."""
        ...

    def read(self, due: frozenset[str]) -> list[float | None]:
        """One value per column (None: missing); reads what ``due`` names, carries the rest."""
        ...

    # Optionally, ``changes_on``: the cadences whose reads change its values. A source whose
    # set lacks FAST (an allocator's columns) is not read on ticks when none of them is due:
    # the sampler keeps its last values. Without it, a source is read every tick.


@dataclass(frozen=True, slots=True)
class NodeReading:
    """One answer from a Prometheus server: values by cluster column, and each GPU's labels."""

    time: float  # unix seconds: the server's evaluation time
    values: Mapping[str, float]  # node:{host}.{gpu}.{metric} -> value in the registry's unit
    gpus: Mapping[tuple[str, str], Mapping[str, str]]  # (host, gpu) -> model, uuid, pod, ...


class RemotePhase(enum.Enum):
    """What a network source is doing (RemoteState.phase)."""

    CONNECTING = "connecting"  # started; no attempt has ended yet
    ANSWERED = "answered"  # its latest answer had GPU series
    NO_SERIES = "no series"  # it answers, with no GPU series (matching the matchers)
    FAILED = "failed"  # its latest request failed (``error``: the client's reason); tried again
    BROKE = "broke"  # its latest answer broke the worker's handling (``error``: the exception)
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class RemoteState:
    """What a network source is doing, as of its latest attempt (the views word it)."""

    phase: RemotePhase
    url: str  # the server, credentials left out
    match: str = ""  # the label matchers that narrow what is read
    nodes: int = 0  # in the latest answer
    gpus: int = 0
    interval: float = 0.0  # seconds between its requests then
    error: str = ""  # FAILED, BROKE: what went wrong


class RemoteSource(Protocol):
    """A network source (Prometheus): it fetches in its own worker, with timeouts, and the
    sampler takes what it has fetched since the last tick, never waiting for it."""

    name: str

    @property
    def state(self) -> RemoteState: ...

    def take(self) -> list[NodeReading]:
        """The answers fetched since the last call, oldest first; [] when none. Never blocks
        on the network and never raises."""
        ...


@dataclass(frozen=True, slots=True)
class AllocatorStats:
    """One device's allocator counters, in bytes (counts for retries and OOMs).

    None where a framework does not keep the counter: JAX and CuPy count no cumulative bytes,
    and CuPy keeps no peak unless nbgpumon's memory hook is armed on the kernel's thread.
    """

    allocated: int  # in live tensors / arrays
    reserved: int  # held from the driver by the allocator's cache or pool
    peak_allocated: int | None  # since the last peak reset (or since start, if not resettable)
    allocated_total: int | None  # cumulative bytes handed out (monotonic)
    alloc_retries: int = 0  # allocations that had to free the cache first
    ooms: int = 0
    active: int | None = None  # torch: blocks in use, split or not
    inactive_split: int | None = None  # torch: reserved but unusable for large requests
    limit: int | None = None  # the most the allocator may take (JAX's bytes_limit, CuPy's limit)
    largest_free: int | None = None  # the largest block it could hand out without growing

    def metric_value(self, name: str) -> int | None:
        """The counter an allocator's registry metric ``name`` holds: ``peak`` is
        ``peak_allocated``; the others are the field of their own name."""
        return getattr(self, "peak_allocated" if name == "peak" else name)


class AllocatorSource(Protocol):
    """A framework's allocator: what the ledger reads at a cell's edges."""

    name: str  # "torch", "jax", "cupy": the registry's source name
    label: str  # how a user writes it: "torch", "JAX", "CuPy"
    metrics: tuple[Metric, ...]  # its timeline metrics, filled from :meth:`timeline_values`
    peak_resettable: bool  # True: a cell's peak is exact after :meth:`reset_peak`

    @property
    def status(self) -> str: ...

    def active(self) -> bool:
        """True once the framework is imported and initialised by the user's code."""
        ...

    def device_uuids(self) -> list[str]:
        """Its devices' UUIDs in its own (CUDA) order, or [] when unknown."""
        ...

    def read(self, cuda_index: int) -> AllocatorStats | None: ...

    def reset_peak(self, cuda_index: int) -> bool:
        """Restart the peak counter on one device; False when it can't."""
        ...

    def timeline_values(self, stats: AllocatorStats) -> list[float | None]:
        """``stats`` as the values of :attr:`metrics`, in that order."""
        ...

    def watch_thread(self) -> None:
        """A measurement begins on the calling thread (the one that runs cells): a source with
        thread-local hooks (CuPy's) arms them there; the others do nothing."""
        ...

    def release_cache(self) -> None:
        """Give cached, unused blocks back to the driver where the framework can (main thread;
        a no-op where it can't, or before it is up)."""
        ...
