"""The ledger holds a ``CellRecord`` for every executed cell and every ``track()`` region.

IPython's ``pre_run_cell`` / ``post_run_cell`` events bracket a cell; ``begin`` and ``end``
snapshot the counters on either side. Peaks are exact where the counters allow it:

* ``peak_mode="reset"`` restarts each allocator's peak counter that can be restarted (torch's,
  CuPy's hook) and Linux's peak-RSS mark when a cell begins, so the peak read at its end covers
  that cell alone. A region nested in a cell carries the peak seen so far into the enclosing
  measurement before resetting, so both stay exact.
* ``peak_mode="preserve"`` never resets them, and JAX's can't be reset. A cell's peak is then
  exact when it raised the process-wide high-water mark; otherwise it is the highest value
  sampled, marked inexact.

Every framework is measured on its own (torch, JAX and CuPy each have an allocator); a record's
device figures are their sum, and each one's are kept beside it.

A cell's record keeps its source, cut to 64 KiB, and the hash of the whole of it; the ledger
holds one copy of each distinct source and at most ``SOURCE_BUDGET`` of them (cell_source.py).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._foundation.clock import wall_clock
from .._foundation.metrics import metric
from .._sampling.device_ask import DeviceAsk
from .._sampling.timeline import RunningStats, Timeline
from .._sources.allocator_columns import read_by_cuda_index
from .._sources.base import AllocatorSource, AllocatorStats
from .._sources.devices.protocol import DeviceSource
from .._sources.frameworks import facts_of, framework
from .._sources.host import HostSource
from .cell_source import SOURCE_BUDGET, BoundedSource, SourceTable, bound_cell_source
from .records import AllocatorUsage, CellRecord, DeviceUsage, records_after

RSS = metric("host", "rss")
PEAK_MODES = ("reset", "preserve")
MAX_LABEL = 1000  # characters in a mark's or region's label: a line to read, not a payload


@dataclass
class Measurement:
    """A measurement in progress."""

    kind: str
    label: str
    execution_count: int | None
    cell_id: str | None
    start: float
    started: float  # perf_counter
    allocators: dict[str, dict[int, AllocatorStats]]  # framework -> CUDA index -> at start
    device_used: list[int | None]
    # False: the device source did not answer in time; ``device_used`` is all None
    device_answered: bool
    rss: int | None
    rss_peak_start: int | None
    rss_reset: bool
    # (framework, CUDA index) whose peak counter was reset, and peaks before a nested reset
    peak_reset: set[tuple[str, int]] = field(default_factory=set)
    carried_peak: dict[tuple[str, int], int] = field(default_factory=dict)
    carried_rss_peak: int = 0
    # running mean/max while it runs: utilization and RSS from the start, the allocators'
    # allocated bytes from a read that must have happened inside it (allocator_lag; only
    # where a framework's peak counter was not restarted: the counter says the rest)
    sampled: RunningStats | None = None
    allocated_seen: RunningStats | None = None
    source: str | None = None  # a cell's whole source, as IPython gave it; None for a region


class EndReadings(NamedTuple):
    """What a measurement's end read at its instant (``Ledger.read_end``)."""

    end: float  # wall clock
    duration: float  # seconds, from perf_counter
    allocators: dict[str, dict[int, AllocatorStats]]  # framework -> CUDA index -> at the end
    device_used: list[int | None] | None  # None: the device did not answer
    rss: int | None
    rss_peak_mark: int | None  # VmHWM


class Ledger:
    """Produces one immutable record per execution; keeps the newest ``capacity``."""

    def __init__(
        self,
        devices: DeviceSource,
        allocators: Sequence[AllocatorSource],
        host: HostSource,
        timeline: Timeline,
        peak_mode: str = "reset",
        capacity: int = 10_000,
        source_budget: int = SOURCE_BUDGET,
        ask: DeviceAsk | None = None,
    ) -> None:
        self.device_source, self.host, self.timeline = devices, host, timeline
        # the device's memory at a cell's start and end, waited for with a deadline (a stuck
        # driver must not stall the cell): Session shares its DeviceAsk
        self.ask = ask if ask is not None else DeviceAsk(devices)
        self._gpu_util = metric(devices.name, "gpu_util")
        used = metric(devices.name, "mem_used")
        self._used_columns = [used.column(d.index) for d in devices.devices]
        # seconds the sampler's newest reading of the device stands for now at a cell's edge;
        # Session keeps it in step with GPUMon.interval
        self.reading_fresh_for = 1.0
        self._asked: tuple[float, list[int | None]] | None = None  # the last asked, and when
        self.allocators = tuple(allocators)
        # those seen up: a framework's CUDA, once up, stays so (each read checks again), so a
        # cell's edge asks only the others whether they are up yet
        self._up: tuple[AllocatorSource, ...] = ()
        # (source, the module its users import: None where no plug-in names one) for the
        # sources not imported yet, which need not be asked
        self._imports = tuple((s, _module_of(s)) for s in self.allocators)
        self._imported_of: tuple[int, tuple[AllocatorSource, ...]] = (-1, ())  # (_imported)
        # the next cell's running stats of the sampled columns, registered while idle and
        # paused until its start (a cell's start then makes none)
        self._ready: tuple[Any, RunningStats] | None = None
        self._allocated = {a.name: metric(a.name, "allocated") for a in self.allocators}
        self._columns_of: tuple[Any, tuple[list[str], list[str]]] | None = None  # (_columns)
        self.peak_mode = peak_mode
        # seconds after a cell's start by which the sampler has read the allocators at least
        # once (their interval and a tick); Session keeps it in step with GPUMon
        self.allocator_lag = 0.6
        self._records: collections.deque[CellRecord] = collections.deque(maxlen=capacity)
        # the live chart's publisher reads the newest records on the sampler's thread while
        # the main thread stores them
        self._records_lock = threading.Lock()
        self._count = 0
        self._sources = SourceTable(source_budget)
        self._sourceless = 0  # how many of the oldest records had their source let go
        self._stack: list[Measurement] = []
        self.marks: collections.deque[tuple[float, str]] = collections.deque(maxlen=capacity)
        self.reset_notice_due = False  # set once, the first time a framework's peak is reset
        self.reset_notice = ""  # what its plug-in says of that first reset (Framework.reset_notice)
        self._reset_notice_given = False

    # -- reading --------------------------------------------------------------------------
    def records(self) -> list[CellRecord]:
        return list(self._records)

    def record_count(self) -> int:
        """How many records it keeps (no copy of them: the chart's status line asks every 2 s)."""
        return len(self._records)

    def newest_first(self) -> Iterable[CellRecord]:
        """The records from the newest back (main thread: stop early to pay only for those)."""
        return reversed(self._records)

    def records_after(self, index: int) -> tuple[int, list[CellRecord]]:
        """The oldest record's index and the records newer than ``index`` (any thread)."""
        with self._records_lock:
            return records_after(self._records, index)

    # -- measuring ------------------------------------------------------------------------
    def begin(
        self,
        kind: str,
        label: str,
        execution_count: int | None = None,
        cell_id: str | None = None,
        source: str | None = None,
    ) -> Measurement:
        """Snapshot the counters now; nest freely (a region inside a cell). ``source``: a
        cell's whole source (a region has none)."""
        for allocator in self._imported():
            allocator.watch_thread()  # thread-local peak hooks (CuPy's) go on the cells' thread
        allocators = self.read_allocators()
        host = self.host
        used = self._device_used(ask=False)
        opened = Measurement(
            kind=kind,
            label=label,
            execution_count=execution_count,
            cell_id=cell_id,
            start=wall_clock(),
            started=time.perf_counter(),
            allocators=allocators,
            device_used=used if used is not None else [None] * len(self.device_source.devices),
            device_answered=used is not None,
            rss=host.rss(),
            rss_peak_start=None,
            rss_reset=False,
            source=source,
        )
        counters = not_reset = 0
        if self.peak_mode == "reset":
            for allocator in self._up:
                for cuda, stats in allocators.get(allocator.name, {}).items():
                    counters += 1
                    self._reset_peak(allocator, cuda, stats, opened)
            if self._stack:  # keep the enclosing measurement's peak before restarting the mark
                peak_now = host.peak_rss() or 0
                for outer in self._stack:
                    outer.carried_rss_peak = max(outer.carried_rss_peak, peak_now)
            opened.rss_reset = host.reset_peak()
            not_reset = counters - len(opened.peak_reset)
        else:
            not_reset = sum(len(by_cuda) for by_cuda in allocators.values())
        if not opened.rss_reset:
            opened.rss_peak_start = host.peak_rss()
        opened.sampled = self._sampled_tracker(opened.start)
        if not_reset:
            # a counter that was not restarted: the sampled allocations bound its cell's peak
            since = opened.start + self.allocator_lag
            opened.allocated_seen = self.timeline.track(self._columns()[1], since)
        self._stack.append(opened)
        return opened

    def prepare_next(self) -> None:
        """While no cell runs (after a cell's reply): the next cell's running stats, registered
        and paused, so that its start only says from when they count."""
        if self._ready is None and not self._stack:
            sampled = self._columns()[0]
            self._ready = (self._columns_of, self.timeline.track(sampled, math.inf))

    def _sampled_tracker(self, since: float) -> RunningStats:
        """The running stats of the sampled columns from ``since`` on: those made ready while
        idle where they still fit (no measurement open, the same columns), else new ones."""
        ready, self._ready = self._ready, None
        if ready is not None:
            columns, tracker = ready
            if not self._stack and columns is self._columns_of:
                self.timeline.resume(tracker, since)
                return tracker
            self.timeline.untrack(tracker)
        return self.timeline.track(self._columns()[0], since)

    def end(
        self,
        opened: Measurement,
        status: str = "ok",
        error: str = "",
        execution_count: int | None = None,
    ) -> CellRecord:
        """Close a measurement begun with :meth:`begin`: its record, not stored yet (the cell
        pipeline adds what forensics found, then :meth:`add` stores it once)."""
        return self.finish(opened, self.read_end(opened), status, error, execution_count)

    def read_end(self, opened: Measurement) -> EndReadings:
        """What must be read at the instant ``opened`` ends (its clocks, the allocators, the
        device, the host; its running stats count no later row); :meth:`finish` makes its record
        from them, at once or after the cell's reply."""
        end = wall_clock()
        duration = time.perf_counter() - opened.started
        for tracker in (opened.sampled, opened.allocated_seen):
            if tracker is not None:
                tracker.until = end  # (read, and let go, by finish)
        if opened in self._stack:
            # closing an outer measurement closes anything left open inside it
            at = self._stack.index(opened)
            for inner in self._stack[at + 1 :]:
                self._stop_tracking(inner)
            del self._stack[at:]
        after = self.read_allocators()
        # asked now where no framework is up (the device's figure is all there is) or one moved
        answered = self._device_used(ask=not after or _moved(opened.allocators, after))
        rss_after, mark = self.host.rss_and_peak()
        return EndReadings(end, duration, after, answered, rss_after, mark)

    def finish(
        self,
        opened: Measurement,
        readings: EndReadings,
        status: str = "ok",
        error: str = "",
        execution_count: int | None = None,
    ) -> CellRecord:
        """The record of ``opened`` from its end's readings (:meth:`read_end`), not stored yet."""
        end, duration, after, answered, rss_after, mark = readings
        sampled = self._stop_tracking(opened)
        # An allocator column carries its last read until the next one, so the first rows of
        # a cell may still hold a value from before it: only rows after a read that must have
        # happened inside the cell count towards a sampled peak.
        if opened.start + self.allocator_lag >= end:
            sampled.update(dict.fromkeys(self._allocated_columns()))
        used_after = answered if answered is not None else [None] * len(self.device_source.devices)
        unanswered = self.device_source.devices and (answered is None or not opened.device_answered)
        devices = tuple(
            self._device_usage(opened, d.index, d.cuda_index, d.name, after, used_after, sampled)
            for d in self.device_source.devices
        )
        rss_peak, rss_exact = self._rss_peak(opened, rss_after, mark, sampled[RSS.column()])
        source = bound_cell_source(opened.source) if opened.source is not None else None
        record = CellRecord(
            index=self._count,
            kind=opened.kind,
            execution_count=opened.execution_count if execution_count is None else execution_count,
            cell_id=opened.cell_id,
            label=opened.label,
            start=opened.start,
            duration=duration,
            status=status,
            error=error,
            devices=devices,
            rss_before=opened.rss,
            rss_after=rss_after,
            rss_peak=rss_peak,
            rss_peak_exact=rss_exact,
            device_unavailable=self.ask.not_answering if unanswered else "",
            **_source_fields(source, self._sources),
        )
        self._count += 1
        return record

    def add(self, record: CellRecord) -> CellRecord:
        """Store ``record`` (from :meth:`end`) and return it, letting go of what the ledger no
        longer keeps: the oldest record when it is full, and the oldest records' sources while
        the sources are over budget."""
        if len(self._records) == self._records.maxlen:
            self._sources.release(self._records[0].source)
            self._sourceless = max(0, self._sourceless - 1)
        with self._records_lock:
            self._records.append(record)
        while self._sources.over_budget and self._sourceless < len(self._records) - 1:
            old = self._records[self._sourceless]
            if old.source:
                self._sources.release(old.source)
                self._records[self._sourceless] = dataclasses.replace(
                    old, source="", source_cut=True
                )
            self._sourceless += 1
        return record

    def replace(self, record: CellRecord) -> bool:
        """Put ``record`` in the place of the stored record of its index (a child's figures
        brought up to date); False when the ledger no longer keeps that record."""
        records = self._records
        if not records:
            return False
        position = record.index - records[0].index
        if not 0 <= position < len(records) or records[position].index != record.index:
            return False
        records[position] = dataclasses.replace(record, source=records[position].source)
        return True

    def mark(self, label: str) -> None:
        """Remember a labelled instant (shown by views as a vertical marker)."""
        self.marks.append((wall_clock(), label))

    def open_cell(self) -> Measurement | None:
        """The innermost cell being measured now, or None between cells."""
        for opened in reversed(self._stack):
            if opened.kind == "cell":
                return opened
        return None

    def current_execution_count(self) -> int | None:
        """The execution count of the innermost open cell, for regions inside it."""
        opened = self.open_cell()
        return opened.execution_count if opened is not None else None

    # -- helpers --------------------------------------------------------------------------
    def _imported(self) -> tuple[AllocatorSource, ...]:
        """The sources whose framework is imported (or may be: no plug-in names its module),
        found again only when the number of imported modules changed (imports only add, and a
        cell's edges ask three times)."""
        modules = sys.modules
        count, found = self._imported_of
        if count != len(modules):
            found = tuple(s for s, module in self._imports if module is None or module in modules)
            self._imported_of = (len(modules), found)
        return found

    def _device_used(self, ask: bool) -> list[int | None] | None:
        """The devices' used memory at a cell's edge; None where the device did not answer.

        Asked now (a hand-off to the ask's worker, ~70 µs) when ``ask``: at a cell's end where
        an allocator moved its reservation during it (the driver's figure moved too), or where
        no framework is up (the driver's figure is the only one). Otherwise the sampler's
        newest reading stands for it (at most an interval old: what moved since belongs to no
        framework of this kernel's), or the last one asked where that is newer;
        asked all the same when the sampler has not read for ``reading_fresh_for`` seconds, or
        the device is not answering (then the ask says so: never a reading from before).
        """
        if not self.device_source.devices:
            return []  # (no device: nothing to ask)
        now = wall_clock()
        if not ask and self._used_columns and not self.ask.silent_for():
            newest = self.timeline.newest_values(self._used_columns)
            if newest is not None and now - newest[0] <= self.reading_fresh_for:
                asked = self._asked
                if asked is not None and asked[0] > newest[0]:
                    return asked[1]
                return [None if v is None else int(v) for v in newest[1]]
        used = self.ask.memory_used()
        if used is not None:
            self._asked = (now, used)
        return used

    def _reset_peak(
        self, source: AllocatorSource, cuda: int, stats: AllocatorStats, opened: Measurement
    ) -> None:
        key = (source.name, cuda)
        if stats.peak_allocated is not None:
            for outer in self._stack:  # the enclosing measurements keep what they saw so far
                outer.carried_peak[key] = max(outer.carried_peak.get(key, 0), stats.peak_allocated)
        if source.reset_peak(cuda):
            opened.peak_reset.add(key)
            if not self._reset_notice_given:
                notice = facts_of(source.name).reset_notice  # its users' own figures change
                if notice:
                    self.reset_notice, self.reset_notice_due = notice, True
                    self._reset_notice_given = True

    def _stop_tracking(self, opened: Measurement) -> dict[str, tuple[float, float] | None]:
        """What the running stats of ``opened`` saw, by column (None: no value); they stop."""
        out: dict[str, tuple[float, float] | None] = dict.fromkeys(
            [*self._sampled_columns(), *self._allocated_columns()]
        )
        for tracker in (opened.sampled, opened.allocated_seen):
            if tracker is not None:
                out.update(self.timeline.untrack(tracker))
        opened.sampled = opened.allocated_seen = None
        return out

    def _sampled_columns(self) -> list[str]:
        """What a record takes from every sample in the cell: utilization and RSS."""
        return self._columns()[0]

    def _allocated_columns(self) -> list[str]:
        """Each allocator's allocated bytes: a peak's lower bound where no counter can say."""
        return self._columns()[1]

    def _columns(self) -> tuple[list[str], list[str]]:
        """(sampled, allocated) columns, made again only when the device source's list of
        devices is another (it is replaced, never changed in place, when its devices open)."""
        devices = self.device_source.devices
        kept = self._columns_of
        if kept is not None and kept[0] is devices:
            return kept[1]
        sampled = [self._gpu_util.column(d.index) for d in devices] + [RSS.column()]
        allocated = [m.column(d.index) for d in devices for m in self._allocated.values()]
        self._columns_of = (devices, (sampled, allocated))
        return sampled, allocated

    def read_allocators(self) -> dict[str, dict[int, AllocatorStats]]:
        """Each active framework's counters by CUDA index; a framework not up is left out."""
        devices = self.device_source.devices
        return {source.name: read_by_cuda_index(source, devices) for source in self._active()}

    def _active(self) -> tuple[AllocatorSource, ...]:
        """The frameworks up now, in their order: those seen up before, and any that came up
        since (only the others are asked)."""
        up = self._up
        if len(up) < len(self.allocators):
            came_up = [s for s in self._imported() if s not in up and s.active()]
            if came_up:
                up = self._up = tuple(s for s in self.allocators if s in up or s in came_up)
        return up

    def read_allocator(self) -> dict[int, AllocatorStats]:
        """All frameworks' counters summed per CUDA index (what a before/after of the whole
        kernel's allocators needs); {} until one is up."""
        out: dict[int, AllocatorStats] = {}
        for stats in self.read_allocators().values():
            for cuda, s in stats.items():
                out[cuda] = s if cuda not in out else _sum_stats(out[cuda], s)
        return out

    def _device_usage(
        self,
        opened: Measurement,
        index: int,
        cuda: int | None,
        name: str,
        after: dict[str, dict[int, AllocatorStats]],
        used_after: list[int | None],
        sampled: dict[str, tuple[float, float] | None],
    ) -> DeviceUsage:
        util = sampled.get(self._gpu_util.column(index))
        frameworks = ()
        if cuda is not None:
            frameworks = tuple(
                usage
                for source in self.allocators
                if (usage := self._framework_usage(opened, source, index, cuda, after, sampled))
            )
        return DeviceUsage(
            index=index,
            cuda_index=cuda,
            name=name,
            allocated_before=_total(frameworks, "allocated_before"),
            allocated_after=_total(frameworks, "allocated_after"),
            reserved_before=_total(frameworks, "reserved_before"),
            reserved_after=_total(frameworks, "reserved_after"),
            device_used_before=_at(opened.device_used, index),
            device_used_after=_at(used_after, index),
            peak_allocated=_total(frameworks, "peak_allocated"),
            peak_exact=len(frameworks) == 1 and frameworks[0].peak_exact,
            allocated_total=_total(frameworks, "allocated_total"),
            util_mean=util[0] if util else None,
            util_max=util[1] if util else None,
            frameworks=frameworks,
        )

    def _framework_usage(
        self,
        opened: Measurement,
        source: AllocatorSource,
        index: int,
        cuda: int,
        after: dict[str, dict[int, AllocatorStats]],
        sampled: dict[str, tuple[float, float] | None],
    ) -> AllocatorUsage | None:
        """One framework's figures on one device; None when it was not up at either edge."""
        key = (source.name, cuda)
        before_stats = opened.allocators.get(source.name, {}).get(cuda)
        after_stats = after.get(source.name, {}).get(cuda)
        if before_stats is None and after_stats is None:
            return None
        # No stats at the start but some at the end: this cell started the framework on this
        # device, and before it the allocator held nothing.
        started_cold = before_stats is None
        peak, exact, allocated_total = None, False, None
        if after_stats is not None:
            if after_stats.allocated_total is not None:
                base = before_stats.allocated_total if before_stats else 0
                allocated_total = after_stats.allocated_total - (base or 0)
            counter = after_stats.peak_allocated
            if counter is not None and (started_cold or key in opened.peak_reset):
                peak, exact = max(counter, opened.carried_peak.get(key, 0)), True
            elif (
                counter is not None
                and before_stats is not None
                and before_stats.peak_allocated is not None
                and counter > before_stats.peak_allocated
            ):
                peak, exact = counter, True  # this cell raised the process-wide mark
            else:
                seen = sampled.get(self._allocated[source.name].column(index))
                peak = max(
                    before_stats.allocated if before_stats else 0,
                    after_stats.allocated,
                    int(seen[1]) if seen else 0,
                )
        zero_if_cold = 0 if started_cold else None
        return AllocatorUsage(
            framework=source.name,
            allocated_before=before_stats.allocated if before_stats else zero_if_cold,
            allocated_after=after_stats.allocated if after_stats else None,
            reserved_before=before_stats.reserved if before_stats else zero_if_cold,
            reserved_after=after_stats.reserved if after_stats else None,
            peak_allocated=peak,
            peak_exact=exact,
            allocated_total=allocated_total,
        )

    def _rss_peak(
        self,
        opened: Measurement,
        rss_after: int | None,
        mark: int | None,
        sampled: tuple[float, float] | None,
    ) -> tuple[int | None, bool]:
        if mark is not None and (
            opened.rss_reset or (opened.rss_peak_start is not None and mark > opened.rss_peak_start)
        ):
            return max(mark, opened.carried_rss_peak), True
        values = [v for v in (opened.rss, rss_after, sampled and int(sampled[1])) if v]
        return (max(values) if values else None), False


def _module_of(source: AllocatorSource) -> str | None:
    plugin = framework(source.name)
    return plugin.module if plugin is not None else None


def _moved(
    before: dict[str, dict[int, AllocatorStats]], after: dict[str, dict[int, AllocatorStats]]
) -> bool:
    """Whether any framework's reservation on any device changed between two reads (one that
    came up or went down counts)."""
    if before.keys() != after.keys():
        return True
    for name, stats in after.items():
        was = before[name]
        if was.keys() != stats.keys():
            return True
        if any(was[cuda].reserved != s.reserved for cuda, s in stats.items()):
            return True
    return False


def _source_fields(source: BoundedSource | None, table: SourceTable) -> dict[str, Any]:
    """A record's source fields; its text is the table's one copy of it."""
    if source is None:
        return {}
    return {"source": table.hold(source.text), "source_hash": source.hash, "source_cut": source.cut}


def _total(frameworks: tuple[AllocatorUsage, ...], attr: str) -> int | None:
    values = [v for f in frameworks if (v := getattr(f, attr)) is not None]
    return sum(values) if values else None


def _sum_stats(a: AllocatorStats, b: AllocatorStats) -> AllocatorStats:
    return AllocatorStats(
        allocated=a.allocated + b.allocated,
        reserved=a.reserved + b.reserved,
        peak_allocated=None,  # peaks of two allocators need not coincide
        allocated_total=None,
    )


def _at(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None
