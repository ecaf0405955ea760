"""``SessionData`` is the one read-only face of a session that every view takes.

The live session (``Session``, so ``nbgpumon.monitor()``) and a recording read back
(``nbgpumon.load(PATH)``) both provide it, so the live chart, the report, the text views, the
static picture and the advisor draw either the same way. A view never reaches past it into a
source, the sampler or the ledger: what it needs to say about them comes as a frozen
:class:`Status` (``facts/status.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..._foundation.windows import Chunk, Window
from ..._ledger.records import CellRecord
from ..._sampling.node_timeline import NodeTimeline
from ..._sources.base import RemotePhase as RemotePhase  # (re-exported: where views find it)
from ..._sources.base import RemoteState as RemoteState
from .devices import Device
from .devices import MigInstance as MigInstance  # (re-exported: where views find it)
from .status import Status


@dataclass(frozen=True, slots=True)
class RunningCell:
    """The cell being measured now, with the readings at its start by timeline column."""

    name: str  # "[13]"
    count: int | None
    kind: str
    label: str
    start: float  # unix seconds
    baseline: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RemoteGpu:
    """A GPU of another node, as the Prometheus server's labels describe it."""

    host: str  # the Hostname label (the DCGM exporter's), else the scrape target's host
    gpu: str  # "gpu0", or "gpu0-mig3" for MIG instance 3 of GPU 0
    model: str = ""
    uuid: str = ""
    pod: str = ""  # Kubernetes: the pod the GPU is given to ("" outside Kubernetes)
    namespace: str = ""
    origin: str = ""  # "dcgm" (the DCGM exporter) or "nbgpumon" (another kernel's exporter)
    mig_profile: str = ""  # "1g.18gb" for a MIG instance


@dataclass(frozen=True, slots=True)
class Node:
    """A host that answered, with its GPUs."""

    host: str
    gpus: tuple[RemoteGpu, ...]
    last_seen: float  # unix seconds of the latest answer that had it


@dataclass(frozen=True, slots=True)
class ClusterState:
    """What the reading of other nodes is doing (worded in ``_views/status/cluster.py``)."""

    remote: RemoteState | None  # the server's source now (or when it stopped); None: none read
    refused_gpus: int = 0  # GPUs the server listed beyond what nbgpumon keeps
    max_gpus: int = 0  # what it keeps
    recorded: bool = False  # a recording's: nothing is read now


RECORDED = ClusterState(None, recorded=True)


class Cluster:
    """Other nodes' GPUs as views read them: live, from the session's Prometheus source, or
    as a recording kept them. Samples are rows of the cluster timeline, columns
    ``node:{host}.{gpu}.{metric}`` (registry metrics of scope "node")."""

    def __init__(
        self,
        timeline: NodeTimeline,
        url: str,
        state: Callable[[], ClusterState] = lambda: RECORDED,
        interval: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.timeline = timeline
        self.url = url  # the server, credentials left out
        self._state, self._interval = state, interval

    @property
    def state(self) -> ClusterState:
        """What the source is doing, or why it has nothing."""
        return self._state()

    @property
    def interval(self) -> float:
        """Seconds between answers (the server's scrape interval, or slower)."""
        return self._interval()

    @property
    def columns(self) -> tuple[str, ...]:
        return self.timeline.columns

    @property
    def cursor(self) -> int:
        return self.timeline.cursor

    @property
    def version(self) -> int:
        """Grows each time columns are added."""
        return self.timeline.version

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        return self.timeline.since(cursor, limit)

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        return self.timeline.window(t0, t1, columns)

    def latest(self) -> dict[str, float] | None:
        return self.timeline.latest()

    def nodes(self) -> tuple[Node, ...]:
        """Every host that answered, sorted by name, each with its GPUs in label order."""
        by_host: dict[str, list[RemoteGpu]] = {}
        for (host, gpu), labels in self.timeline.gpus().items():
            by_host.setdefault(host, []).append(RemoteGpu(host, gpu, **_gpu_fields(labels)))
        seen = self.timeline.last_seen()
        return tuple(
            Node(host, tuple(sorted(gpus, key=lambda g: _gpu_order(g.gpu))), seen.get(host, 0.0))
            for host, gpus in sorted(by_host.items())
        )


_GPU_FIELDS = ("model", "uuid", "pod", "namespace", "origin", "mig_profile")


def _gpu_fields(labels: dict[str, str]) -> dict[str, str]:
    return {k: str(labels[k]) for k in _GPU_FIELDS if k in labels}


def _gpu_order(gpu: str) -> tuple[int, int, str]:
    """gpu2 before gpu10; a GPU's MIG instances after it, by instance."""
    head, _, mig = gpu.partition("-mig")
    number = head[3:]
    return (
        int(number) if number.isdigit() else 1 << 30,
        int(mig) if mig.isdigit() else -1,
        gpu,
    )


@runtime_checkable
class SessionData(Protocol):
    """A session's devices, samples, ledger and marks, read-only."""

    source: str  # "live session", or "run.sqlite (session 2)"

    @property
    def devices(self) -> Sequence[Device]: ...

    @property
    def columns(self) -> Sequence[str]:
        """The timeline columns (``gpu0.nvml.mem_used``, ``host.rss``), in row order."""
        ...

    @property
    def records(self) -> Sequence[CellRecord]:
        """The ledger, oldest first."""
        ...

    def records_after(self, index: int) -> tuple[int, Sequence[CellRecord]]:
        """The index of the oldest record kept (0 when none) and the records newer than
        ``index``, oldest first, at a cost that does not grow with the ledger."""
        ...

    @property
    def marks(self) -> Sequence[tuple[float, str]]:
        """(unix seconds, label), oldest first."""
        ...

    @property
    def cursor(self) -> int:
        """Samples so far; :meth:`since` returns what came after a cursor."""
        ...

    def window(
        self, t0: float = ..., t1: float = ..., columns: Sequence[str] | None = None
    ) -> Window:
        """Samples in ``[t0, t1]`` (all by default), of ``columns`` (all by default)."""
        ...

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        """Raw samples after ``cursor``."""
        ...

    def latest(self) -> dict[str, float] | None:
        """The newest sample by column, plus ``"time"``; None when there is none."""
        ...

    def running(self) -> RunningCell | None:
        """The cell being measured now (never, in a recording)."""
        ...

    def status(self) -> Status: ...

    @property
    def cluster(self) -> Cluster | None:
        """Other nodes' GPUs (``%gpumon cluster URL``), or None when none were ever read."""
        ...

    def subscribe(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(cursor)`` as samples arrive (never, in a recording); returns the
        function that stops it."""
        ...
