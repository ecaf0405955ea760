"""A cell's life, in one place and in its order. It begins (the waits and notes before it, the
ledger's start readings, its NVTX range last) and ends (the range first, the ledger's end readings,
the forensics, then the record stored once, recorded, and the views told). Regions (``track()``)
store their records through it too. It returns data; the words are the views'."""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from .._foundation.errors import UsageError, exception_line
from .._ledger.kinds_notes import KindsReadFailed
from .._ledger.ledger import EndReadings, Ledger, Measurement
from .._ledger.measured_fixes import MeasuredFix, measured_fixes
from .._ledger.outcome import first_line, is_host_out_of_memory
from .._ledger.records import CellRecord, Retention
from .._ledger.traced import TracedItem
from .._sampling.rings import warm_numpy_fold
from .._sampling.sampler import PREPARE_WAIT, Sampler
from . import cell_clock as stage
from .cell_clock import CellClock
from .config import GPUMon
from .controls.memory import MemoryControl
from .controls.recording import RecordingControl
from .controls.tracing import TracingControl
from .labels import check_label_length
from .region import Region

if TYPE_CHECKING:
    from .._forensics.cell_kinds import CellKinds
    from .._forensics.leaks import LeakWatch
    from .._forensics.postmortem import OomFacts
    from .._recording.notices import Notice
    from .controls.children import ChildrenControl


# Puts a call off until the kernel has sent the cell's reply (on the main thread, before the
# next message); False where it cannot (then the cell's end does it at once).
AfterReply = Callable[[Callable[[], None]], bool]


class _PutOff(NamedTuple):
    """A cell's end as read at its instant: what its record is made of, at once or after its
    reply (``Ledger.finish``'s arguments, in its order)."""

    opened: Measurement
    readings: EndReadings
    status: str
    error: str
    execution_count: int | None


@dataclass(frozen=True)
class CellOutcome:
    """What a cell's end found: its record as stored, and what to tell about it."""

    record: CellRecord  # with what it left alive by line (tracing on): ``record.traced``
    oom: OomFacts | None = None  # the post-mortem's facts (a GPU out-of-memory error)
    measured: tuple[MeasuredFix, ...] = ()  # with ``oom``: what whatif measured of the fixes
    reset_notice: str = ""  # a plug-in's words on the first reset of its peak counter
    range_error: str = ""  # the NVTX ranges' new problem
    notices: tuple[Notice, ...] = ()  # what the recorder met (invariant 14)
    lost: str = ""  # the last cell's end, put off until after its reply, failed: why


class CellPipeline:
    """Owns the order of a cell's begin and end (main thread)."""

    def __init__(
        self,
        config: GPUMon,
        shell: Callable[[], Any],
        sampler: Sampler,
        ledger: Ledger,
        tracing: TracingControl,
        memory: MemoryControl,
        recording: RecordingControl,
        children: ChildrenControl | None = None,
    ) -> None:
        self.config, self._shell, self._sampler, self.ledger = config, shell, sampler, ledger
        self.children = children
        self._tracing, self._memory, self._recording = tracing, memory, recording
        self._leak_watch: LeakWatch | None = None
        self._cell_kinds: CellKinds | None = None  # each cell's memory by kind
        self.clock = CellClock()  # what each stage of the cell path costs
        # what views hear of: a record stored or a mark set; a cell's measurement begun
        self.on_changed: Callable[[], None] = _nothing
        self.on_opened: Callable[[], None] = _nothing
        # whether a view must hear of a cell's end before its reply (then it is not put off)
        self.told_before_reply: Callable[[], bool] = _never
        self._pending: _PutOff | None = None  # a quiet cell's end, put off until its reply
        self._lost = ""  # a put-off end that failed, said at the next cell's end
        self._fold_warm = False  # numpy's first fold done (warm_numpy_fold): not asked again

    def begin(
        self, execution_count: int | None, source: str, cell_id: str | None = None
    ) -> Measurement:
        """Before a cell, notes the namespace (ids only) for the leak verdict, what is alive on the
        GPU when tracing and the start readings. Its NVTX range comes last: it covers the cell, not
        nbgpumon's work before it."""
        self._finish_pending(waited_for=True)  # (the cell before, when its end was put off)
        clock = self.clock
        clock.start()
        sampler = self._sampler
        sampler.wait_until_prepared(PREPARE_WAIT)  # (a cell run at once after loading)
        quiet = sampler.quiet
        if quiet is not None:  # (the sampler at its interval while a cell runs)
            quiet.cell_running = True
            quiet.cells_begun += 1
            if quiet.asleep:
                sampler.wake_for_cell()
        if self.children is not None:
            self.children.settle()  # (what an earlier cell's children did since)
        if not self._fold_warm:  # numpy's first fold, before the start readings: not the cell's
            self._fold_warm = warm_numpy_fold()
        clock.lap(stage.WAITS)
        shell = self._shell()
        if shell is not None:
            self._leaks(shell).cell_started()
            self._tracing.cell_started(execution_count)
        clock.lap(stage.NAMESPACE)
        opened = self.ledger.begin(
            "cell", first_line(source), execution_count, cell_id, source=source
        )
        clock.lap(stage.START_READINGS)
        if self.children is not None:
            self.children.began(opened.start)  # (which PIDs are this cell's children)
        self._tracing.open_range(execution_count, source)
        self.on_opened()  # after begin: the cell's start readings exist now
        clock.lap(stage.OPENED)
        return opened

    def end(
        self,
        opened: Measurement,
        status: str,
        error: str,
        execution_count: int | None,
        exception: BaseException | None,
        after_reply: AfterReply | None = None,
    ) -> CellOutcome | None:
        """After a cell, ends its range first (it covers the cell's work), then takes the end
        readings. Then who holds what it kept (over the threshold), what it left alive by line
        (tracing on), an out-of-memory post-mortem's facts; then its record stored, recorded,
        told.

        ``after_reply``: where given, a quiet cell (nothing to print under it: no summary line,
        no tracing, no out-of-memory error, no notice; no view that must hear of it before the
        reply, ``told_before_reply``) has the work after its readings put off
        with it until the kernel has sent the cell's reply (the readings themselves are taken
        now); None is returned then. Where that has not run yet, the next cell's begin, a read
        of the ledger on the main thread (``Session.cells``, ``LiveData.records``), an unload
        and the session's close finish it first (:meth:`finish_pending`)."""
        clock = self.clock
        clock.resume()
        self._tracing.close_range()
        watch = self._sampler.quiet
        if watch is not None:
            watch.cell_running = False
        # whether the recorder was on while the cell ran (a cell that initialised CUDA turns
        # it on at its end)
        traced_during_cell = self._tracing.active
        readings = self.ledger.read_end(opened)
        clock.lap(stage.END_READINGS)
        shell = self._shell()
        notices = tuple(self._recording.notices()) if shell is not None else ()
        range_error = self._tracing.range_error_news()
        lost, self._lost = self._lost, ""
        reset_notice = ""
        if self.ledger.reset_notice_due:
            self.ledger.reset_notice_due = False
            reset_notice = self.ledger.reset_notice
        quiet = not (
            notices
            or lost
            or range_error
            or reset_notice
            or self.config.summary
            or self._tracing.armed
            or traced_during_cell
            or status == "oom"
            or shell is None
            or self.told_before_reply()
        )
        end = _PutOff(opened, readings, status, error, execution_count)
        if quiet and after_reply is not None:
            self._pending = end
            if after_reply(self.finish_pending):
                return None
            self._pending = None
        record = self._finish(end)
        outcome = self._told(record, shell, exception, traced_during_cell)
        return dataclasses.replace(
            outcome, reset_notice=reset_notice, range_error=range_error, notices=notices, lost=lost
        )

    def finish_pending(self) -> None:
        """Finish the record of a quiet cell whose end was put off (:meth:`end`), if any: what
        its readings make of it, its forensics, stored and told. Its times are the cell's
        (``%gpumon status`` says how much of them came after the reply). On the main thread
        only (it reads the namespace): elsewhere, and with nothing put off, it does nothing."""
        self._finish_pending(waited_for=False)

    def _finish_pending(self, waited_for: bool) -> None:
        """:meth:`finish_pending`; ``waited_for``: a cell's start waits for it (its time then
        counts as waited for, in ``%gpumon status``)."""
        if self._pending is None or threading.current_thread() is not threading.main_thread():
            return
        pending, self._pending = self._pending, None
        clock = self.clock
        clock.resume()
        try:
            record = self._finish(pending)
            shell = self._shell()
            self._told(record, shell, None, False)
            if shell is not None:
                self._leaks(shell).cell_ended()  # (the next cell's start: noted already)
        except Exception as exc:  # (no cell to raise in: said at the next cell's end)
            count = pending.execution_count
            count = count if count is not None else pending.opened.execution_count
            self._lost = f"cell [{count}]'s record was lost: {exception_line(exc)}"
        finally:
            clock.done(waited_for)

    def _finish(self, end: _PutOff) -> CellRecord:
        """The record of a cell from its end's readings, with the children it started."""
        record = self.ledger.finish(*end)
        self.ledger.prepare_next()  # (the next cell's start makes less: after its reply, here)
        self.clock.lap(stage.END_READINGS)  # (its record made of them)
        if self.children is not None:
            record = self.children.charge(record)  # (the processes it started)
            self.children.ready_for_next()  # (the next cell's start reads less)
        self.clock.lap(stage.CHILDREN)
        return record

    def _told(
        self, record: CellRecord, shell: Any, exception: BaseException | None, traced: bool
    ) -> CellOutcome:
        """The forensics of a cell's ``record``, then the record stored, recorded, and the views
        told."""
        clock = self.clock
        outcome = CellOutcome(record)
        try:
            if shell is not None:
                outcome = self._forensics(shell, record, exception, traced)
        finally:  # a forensics that failed still leaves the cell's record
            del exception  # keep no reference to the failing frames past this point
            self.ledger.add(outcome.record)
            self._recording.add_cell(outcome.record)
            clock.lap(stage.STORE)
            self.on_changed()
            clock.lap(stage.VIEWS)
        return outcome

    def other_code_ran(self) -> None:
        """Code that is no cell (a front end's own) runs now: what the last cell's end noted of
        the namespace for the next cell's start may no longer hold."""
        if self._leak_watch is not None:
            self._leak_watch.other_code_ran()

    def mark(self, label: str) -> None:
        """Put a labelled marker on the timeline at this instant."""
        if not isinstance(label, str) or not label.strip():
            raise UsageError('mark() takes a non-empty label: nbgpumon.mark("warm-up done")')
        check_label_length("mark", label)
        self.ledger.mark(label.strip())
        self._recording.add_mark(*self.ledger.marks[-1])
        self.on_changed()

    def track(self, label: str) -> Region:
        """A region inside a cell, recorded like a cell: ``with mon.track("epoch 3"): ...``."""
        if not isinstance(label, str) or not label.strip():
            raise UsageError('track() takes a non-empty label: with nbgpumon.track("epoch 3"): ...')
        check_label_length("track", label)
        store = functools.partial(self.store, tell=False)
        return Region(self.ledger, label.strip(), store, ranges=self._tracing.nvtx_ranges)

    def store(self, record: CellRecord, tell: bool = True) -> CellRecord:
        """Keep ``record`` in the ledger and record it, once per record; tell the views
        (``tell``; a region's record shows with its cell's, at that cell's end)."""
        self.ledger.add(record)
        self._recording.add_cell(record)
        if tell:
            self.on_changed()
        return record

    def _forensics(
        self, shell: Any, record: CellRecord, exception: BaseException | None, traced: bool
    ) -> CellOutcome:
        clock = self.clock
        leaks = self._leaks(shell)
        retention: Retention | None = leaks.verdict(record, self.config.leak_threshold)
        clock.lap(stage.HOLDERS)
        record = self._read_kinds(shell, record, leaks)
        clock.lap(stage.KINDS)
        # what it left alive and what its peak held, as data: the views word them when shown
        found = self._tracing.cell_finished(record.execution_count)
        peak = self._peak_items(record)
        clock.lap(stage.TRACING)
        if retention is not None or found or peak:  # (a copy only when there is news)
            record = dataclasses.replace(
                record, retention=retention, traced=found, traced_peak=peak
            )
        oom = None
        # host MemoryError is "oom" in the ledger too, but this post-mortem is about the GPU
        if (
            exception is not None
            and record.status == "oom"
            and not is_host_out_of_memory(exception)
            and self.config.oom_report
        ):
            from .._forensics.postmortem import gather

            oom = gather(self._memory, shell, record, exception)
            if _flight_records(oom.framework):
                flight = self._tracing.oom_flight_record(shell, record, traced)
                oom = dataclasses.replace(oom, **flight)
            clock.lap(stage.POST_MORTEM)
            return CellOutcome(record, oom, tuple(measured_fixes(self.ledger.records()).values()))
        return CellOutcome(record, oom)

    def _peak_items(self, record: CellRecord) -> tuple[TracedItem, ...]:
        """What the cell's peak held and it freed, by line, as the record keeps it (tracing
        on): each device's allocations, then its cut if the replay stopped short."""
        items: list[TracedItem] = []
        for replay in self._tracing.peak_replays(record):
            items += replay.found
            if replay.cut is not None:
                items.append(replay.cut)
        return tuple(items)

    def _read_kinds(self, shell: Any, record: CellRecord, leaks: LeakWatch) -> CellRecord:
        """``record`` with its memory by kind; where that read fails, the reason in its
        record instead (the breakdown of that cell is what is lost, nothing else)."""
        try:
            return self._kinds(shell).read(record, leaks.changes, whole=leaks.scan_of_cell)
        except Exception as exc:
            note = (KindsReadFailed(exception_line(exc)),)
            devices = tuple(
                dataclasses.replace(d, kinds_note=note) if d.frameworks else d
                for d in record.devices
            )
            return dataclasses.replace(record, devices=devices)

    def _kinds(self, shell: Any) -> CellKinds:
        if self._cell_kinds is None or self._cell_kinds.shell is not shell:
            from .._forensics.cell_kinds import CellKinds

            self._cell_kinds = CellKinds(shell)
        return self._cell_kinds

    def _leaks(self, shell: Any) -> LeakWatch:
        if self._leak_watch is None or self._leak_watch.shell is not shell:
            from .._forensics.leaks import LeakWatch  # (and the holder scan): first cell's end

            self._leak_watch = LeakWatch(shell)
        return self._leak_watch


def _flight_records(name: str) -> bool:
    """Whether an out-of-memory error of framework ``name`` gets the flight recorder: its
    plug-in records allocation history."""
    from .._sources.frameworks import framework

    plugin = framework(name)
    return plugin is not None and plugin.memory_history is not None


def _nothing() -> None:
    """No view listens yet."""


def _never() -> bool:
    """No view must hear of a cell's end before its reply."""
    return False
