"""``SessionData``: the one read-only face of a session that every view takes.

The live session (``Session``, so ``nbgpumon.monitor()``) and a recording read back
(``nbgpumon.load(PATH)``) both provide it, so the live chart, the report, the text views, the
static picture and the advisor draw either the same way. A view never reaches past it into a
source, the sampler or the ledger: what it needs to say about them comes as a frozen
:class:`Status`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .._ledger.records import CellRecord
from .._sampling.timeline import Chunk, Window


@dataclass(frozen=True, slots=True)
class Device:
    """One GPU of the session, by its NVML index."""

    index: int
    name: str
    memory_total: int | None = None  # bytes
    cuda_index: int | None = None
    uuid: str = ""


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
class Status:
    """What a view says about the session's machinery, read at one instant."""

    state: str  # "sampling", "stopped", "closed" or "recorded"
    interval: float  # seconds between samples (as configured, or as recorded)
    line: str  # one line: the widget's status bar
    lines: tuple[str, ...]  # %gpumon status: what is measured, what is unavailable and why
    processes: tuple[str, ...] = ()  # processes on the GPUs now, one line each


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

    def subscribe(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(cursor)`` as samples arrive (never, in a recording); returns the
        function that stops it."""
        ...
