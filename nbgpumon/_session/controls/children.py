"""The children of this kernel, charged to the cells that started them. A cell's record gets the
children that started while it ran, and a child that outlives its cell (or is first seen after the
cell's end) brings that cell's record up to date in the ledger and the recording.

The process source follows the children on the sampler's thread; this runs on the main
thread, at cells' ends and when a view asks, and reads only what the source has copied out.
Its cost follows the children that changed, never the number of cells.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..._foundation.clock import wall_clock
from ..._ledger.ledger import Ledger
from ..._ledger.records import CellRecord
from ..._sources.processes.children import ChildUsage
from ..._sources.processes.last_pid import born_after, last_pid
from ..._sources.processes.on_gpu import ProcessOnGpu
from ..._sources.processes.proc_reads import has_exited
from ..._sources.processes.source import ProcessSource

# A child's start is read to a clock tick (10 ms, cut down), so it may read up to one tick
# before the instant it began: a cell that began less than this after the start read is the
# one that started it. (A child forked in the last tick of a cell that the next one follows at
# once is the next one's: rarer than a child started first thing in a cell.)
TICK = 0.02
PIDS_KEPT = 1024  # cells whose last PID at their start is kept
# Seconds the last PID read after a cell's end stands for the next cell's start: well inside the
# time a busy machine takes to hand out WRAP numbers, so the order it gives stays exact.
BASELINE_FRESH = 10.0
MAX_CHILDREN = 64  # kept in one record: a cell that starts thousands keeps its first ones


class ChildrenControl:
    """Charges children to cells; says which cell started a child."""

    def __init__(
        self,
        processes: ProcessSource,
        ledger: Ledger,
        rerecord: Callable[[CellRecord], None],
    ) -> None:
        self.processes, self._ledger, self._rerecord = processes, ledger, rerecord
        self._settled = 0  # the source's ``changes`` when last settled
        self.on_changed: Callable[[], None] = _nothing  # a record was brought up to date
        # each recent cell's start -> the last PID handed out as it began (bounded)
        self._last_pids: dict[float, int] = {}
        # (when, the last PID then), read after a cell's end for the next cell's start
        self._baseline: tuple[float, int] | None = None

    def ready_for_next(self) -> None:
        """No cell runs (after a cell's reply): the last PID handed out now, for the next cell's
        start, which then reads nothing. The PIDs after it are the next cell's,
        or a thread's that started a process between the two cells (counted as the next's)."""
        last = last_pid()
        self._baseline = (wall_clock(), last) if last is not None else None

    def began(self, start: float) -> None:
        """A cell began at ``start`` (its record's): the PIDs after the last one now are its
        or a later cell's (main thread: the last PID read after the last cell's end, where it is
        fresh; else one read of a kept file)."""
        baseline, self._baseline = self._baseline, None
        fresh = baseline is not None and 0 <= start - baseline[0] <= BASELINE_FRESH
        last = baseline[1] if baseline is not None and fresh else last_pid()
        if last is not None:
            if len(self._last_pids) >= PIDS_KEPT:
                self._last_pids.pop(next(iter(self._last_pids)))
            self._last_pids[start] = last

    def charge(self, record: CellRecord) -> CellRecord:
        """Gives ``record`` (a cell's, at its end) the children that started while it ran: it is the
        newest cell, so every child that began after its start is its own."""
        if record.kind != "cell":
            return record
        start, end = record.start, record.start + record.duration
        mine = [
            _ended_by_now(c, end)
            for c in self.processes.children(since=start - TICK)
            if c.started <= end and self._began_in(c.pid, c.started, record)
        ]
        return dataclasses.replace(record, children=_merged((), mine)) if mine else record

    def settle(self) -> None:
        """Bring up to date the records of children that started, grew or ended since the
        last call (a child first seen after its cell ended is added to it)."""
        changes = self.processes.changes
        if changes == self._settled:
            return
        self._settled = changes
        by_cell: dict[int, tuple[CellRecord, list[ChildUsage]]] = {}
        for child in self.processes.children():
            record = self._cell_of(child.pid, child.started)
            if record is not None:
                by_cell.setdefault(record.index, (record, []))[1].append(child)
        changed = False
        for record, children in by_cell.values():
            mine = _merged(record.children, children)
            if mine != record.children:
                updated = dataclasses.replace(record, children=mine)
                if self._ledger.replace(updated):
                    self._rerecord(updated)
                    changed = True
        if changed:
            self.on_changed()

    def processes_now(self) -> list[ProcessOnGpu]:
        """The GPUs' processes at the last read, each child with the cell that started it."""
        return [
            dataclasses.replace(p, started_by=self.started_by(p.pid, p.child_started))
            if p.child_started is not None and p.pid is not None
            else p
            for p in self.processes.processes
        ]

    def started_by(self, pid: int, started: float) -> int | None:
        """The execution count of the cell running when child ``pid`` began at ``started``."""
        record = self._cell_of(pid, started)
        return record.execution_count if record is not None else None

    def _began_in(self, pid: int, started: float, record: CellRecord) -> bool:
        """Whether child ``pid`` (begun at ``started``) began after ``record``'s cell did: by
        PID where the last one at the cell's start is known, else by its start (to a tick)."""
        last = self._last_pids.get(record.start)
        if last is not None:
            return born_after(pid, last)
        return started + TICK >= record.start

    def _cell_of(self, pid: int, started: float) -> CellRecord | None:
        """The stored cell that was running when child ``pid`` began at ``started``: the
        latest to begin before it, if it had not ended. Searched from the newest (children
        are recent): the cost is the cells since, not all of them."""
        for record in self._ledger.newest_first():
            if record.kind != "cell" or not self._began_in(pid, started, record):
                continue
            if record.start + record.duration + TICK >= started:
                return record
            return None  # between two cells (started by a thread, or before any cell)
        return None


def _ended_by_now(child: ChildUsage, now: float) -> ChildUsage:
    """``child`` as ended, where it has exited since the sampler last looked (a script that
    just ended with its shell escape): said now, not at the next look."""
    if not child.running:
        return child
    exited, code = has_exited(child.pid, own_child=child.depth == 1)
    if not exited:
        return child
    return dataclasses.replace(
        child, ended=now, exit_code=child.exit_code if code is None else code
    )


def _merged(known: tuple[ChildUsage, ...], newer: list[ChildUsage]) -> tuple[ChildUsage, ...]:
    """``known`` with ``newer``'s figures in place of theirs (one the source let go of stays
    as last seen), in order of start."""
    found = {(c.pid, c.started): c for c in known}
    for child in newer:
        found[(child.pid, child.started)] = child
    ordered = sorted(found.values(), key=lambda c: c.started)
    return tuple(ordered[:MAX_CHILDREN])


def _nothing() -> None:
    pass
