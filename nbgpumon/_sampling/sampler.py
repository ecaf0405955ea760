"""The one long-lived thread: it ticks, reads the sources, appends to the timeline.

It never prints and never touches a display; failures become ``status``. Subscribers (a
widget publisher, later) are called with the timeline cursor after each tick and must be
quick. Fork-safe: locks are taken before ``fork()`` and the child starts with no sampler.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence

from .._foundation.clock import WALL_ANCHOR
from .._sources.base import (
    ALLOCATOR,
    DETAIL,
    FAST,
    REPEAT,
    SLOW,
    STEADY_PERIOD,
    RemoteSource,
    Source,
)
from .node_timeline import NodeTimeline
from .quiet import QuietWatch
from .sampler_cost import CostReport, SamplerCost
from .timeline import Timeline

Subscriber = Callable[[int], None]
_FAST_ONLY = frozenset({FAST})
_FAST_REPEAT = frozenset({FAST, REPEAT})  # memory only: utilization and RSS carried
_EVERY_TICK = frozenset({FAST})  # a source's ``changes_on`` when it does not say
# Each source's read is timed on every slower tick and on one fast tick in this many: the
# stamps cost more than some of the reads they time.
SOURCE_TIMING_EVERY = 16

MIN_INTERVAL = 0.01  # seconds; faster than 100 Hz costs more than it shows
MAX_INTERVAL = 60.0


class Sampler:
    """Reads ``sources`` every ``interval`` seconds into ``timeline`` on a daemon thread.

    Each tick asks every source for its row with the cadences that are due (``FAST`` always;
    ``ALLOCATOR``, ``DETAIL`` and ``SLOW`` every ``intervals[cadence]`` seconds); the rows,
    side by side, are one timeline row, so the timeline's columns are the sources' columns in
    order (:func:`timeline_columns`).
    """

    def __init__(
        self,
        sources: Sequence[Source],
        timeline: Timeline,
        interval: float = 0.1,
        intervals: dict[str, float] | None = None,
    ) -> None:
        self.sources = list(sources)
        self.timeline = timeline
        self.interval = interval
        self.intervals = {ALLOCATOR: 0.5, DETAIL: 1.0, SLOW: 2.0, **(intervals or {})}
        self.ticks = 0
        self.last_tick_seconds = 0.0  # wall time of the last tick's reads
        self.error = ""  # the last exception a tick contained, for status
        self._subscribers: list[Subscriber] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        # what runs once a stopped thread has ended (Session: NVML's shutdown, which must not
        # run under a call the thread is still in); the thread's own list, [None] once it ended
        self._at_end: list[Callable[[], None] | None] = [None]
        self._end_lock = threading.Lock()
        # Held while nobody asks the thread to wake; released to wake it: its wait is one
        # timed acquire (an Event's wait builds a lock and a list entry every time).
        self._wake = _held_lock()
        self._prepared = threading.Event()  # set once the thread has built the timeline
        self._lock = threading.Lock()  # held for the duration of a tick
        self._next = dict.fromkeys(self.intervals, 0.0)  # monotonic time each cadence is due
        self._soonest = 0.0  # the earliest of those
        self._steady_next = 0.0  # faster than STEADY_PERIOD: when utilization and RSS are due
        # Other nodes' GPUs: a network source fetches in its own worker; each tick takes what
        # it has fetched since (never waiting for it) into the cluster timeline.
        self.remote: RemoteSource | None = None
        self.nodes: NodeTimeline | None = None
        # The last row, which fast ticks refill in place: each source read every tick (its
        # ``changes_on`` holds FAST, or it has none), with where its values go in the row.
        self._row: list[float | None] | None = None
        self._every_tick: list[tuple[Source, int, int]] = []
        self.cost = SamplerCost(self.sources)  # its own CPU and wall time, by tick class
        # where given, whether nothing moves: then it waits quiet.idle_interval between ticks
        self.quiet: QuietWatch | None = None
        self._cell_woke = False  # woken by a cell's start: its next tick an interval from then
        _live_samplers.add(self)

    # -- control --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread; does nothing when it already runs."""
        if self.running:
            return
        self.cost.reset()  # a share of a core while it runs, not across a pause
        # Each thread gets its own stop event: one stuck in a slow driver call past stop()'s
        # timeout still ends when that call returns, and never runs beside its successor.
        self._stop = threading.Event()
        self._at_end = []
        self._thread = threading.Thread(
            target=self._run, args=(self._stop, self._at_end), name="nbgpumon-sampler", daemon=True
        )
        self._thread.start()

    def wait_until_prepared(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds while the running thread builds the timeline
        (importing numpy). A cell begins only after it, so that the import's memory is not
        the cell's and no fork happens mid-import (a child would inherit the module's import
        lock held, by a thread it does not have)."""
        if not self._prepared.is_set() and self.running:  # (set: one attribute read a cell)
            self._prepared.wait(timeout)

    def wait_for_first_tick(
        self, timeout: float, give_up: Callable[[], object] | None = None
    ) -> bool:
        """Wait at most ``timeout`` seconds for the running thread's first sample (it builds the
        timeline first, numpy included). It stops waiting once ``give_up()`` is true (a driver not
        answering); True once there is one."""
        deadline = time.monotonic() + timeout
        while self.ticks == 0 and self.running and time.monotonic() < deadline:
            if give_up is not None and give_up():
                break
            time.sleep(0.005)
        return self.ticks > 0

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop the thread and wait for it (at most ``timeout`` seconds); True when it has
        ended. One still in a source's read ends when the read returns, appending nothing
        and calling no subscriber (a reload's new session never hears from it)."""
        thread = self._thread
        self._stop.set()
        self._wake_up()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        return thread is None or not thread.is_alive()

    def when_ended(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the last thread started has ended: now if it has, else
        from that thread as it ends."""
        with self._end_lock:
            if self._at_end[-1:] != [None]:  # its thread has not ended yet
                self._at_end.append(callback)
                return
        callback()

    def set_interval(self, seconds: float) -> None:
        """Change the tick interval; the sleeping thread wakes to use it at once."""
        if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
            raise ValueError(f"interval must be between {MIN_INTERVAL} and {MAX_INTERVAL} s")
        self.interval = seconds
        self._wake_up()

    def wake_for_cell(self) -> None:
        """A cell began while the thread waits its quiet interval: it ticks an interval from
        now, and at its interval from then on (main thread; a lock's release)."""
        if self.quiet is not None:
            self.quiet.asleep = False  # (the next cell before that tick wakes it no more)
        self._cell_woke = True
        self._wake_up()

    def _wake_up(self) -> None:
        with contextlib.suppress(RuntimeError):  # (already woken: it was not held)
            self._wake.release()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(cursor)`` after every tick; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    # -- the thread -----------------------------------------------------------------------
    def _run(self, stop: threading.Event, at_end: list[Callable[[], None] | None]) -> None:
        try:
            self._loop(stop)
        finally:
            with self._end_lock:
                callbacks, at_end[:] = list(at_end), [None]
            for callback in callbacks:
                if callback is not None:
                    with contextlib.suppress(Exception):
                        callback()

    def _loop(self, stop: threading.Event) -> None:
        try:
            self.timeline.prepare()
        except Exception as exc:  # (out of memory): the first append tries again
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._prepared.set()
        cpu = self.cost.started_thread()
        next_tick = time.monotonic()
        while not stop.is_set():
            cpu = self._tick(cpu, stop)  # charged from the last tick's end: its wait and wake too
            quiet, mono = self.quiet, time.monotonic()
            if quiet is not None and quiet.after_tick(self._row, mono):
                next_tick += max(quiet.idle_interval, self.interval)
            else:
                next_tick += self.interval
            delay = next_tick - mono
            if delay < 0:  # fell behind (suspended, slow driver): skip, don't burst
                next_tick = time.monotonic()
                delay = 0
            # the wait: a timed acquire of the held lock, cut short by a wake-up (stop, a new
            # interval, a cell's start), after which the new interval is kept from then on
            while self._wake.acquire(timeout=delay):
                next_tick = time.monotonic()
                if not self._cell_woke or stop.is_set():
                    break
                # a cell began: its first row an interval later, not during its start
                self._cell_woke = False
                next_tick += self.interval
                delay = self.interval

    def tick(self) -> None:
        """One round of reads; callable directly (tests, benchmarks). Never raises."""
        self._tick(time.thread_time_ns())

    def _tick(self, cpu_from: int, stop: threading.Event | None = None) -> int:
        """One tick, charged the thread's CPU time since ``cpu_from`` (``thread_time_ns``);
        returns that clock at its end: one read of it a tick. A tick whose thread was
        stopped while it read (a driver slow to answer) keeps nothing of what it read."""
        cost = self.cost
        with self._lock:
            if stop is not None and stop.is_set():  # (stopped while an older tick held it)
                return time.thread_time_ns()
            wall_from = time.perf_counter_ns()
            due = _FAST_ONLY
            try:
                mono = time.monotonic()
                now = WALL_ANCHOR + mono  # (wall_clock(), from this one read of the clock)
                row = self._row
                if row is None or mono >= self._soonest or self.ticks % SOURCE_TIMING_EVERY == 0:
                    due = self._read_all(now, mono, stop)
                    if stop is not None and stop.is_set():
                        return time.thread_time_ns()  # (a stopped thread's: kept nowhere)
                else:
                    # Most ticks: only the sources read every tick, into the last row in place
                    # (the others' values are what their last reads left there); flat, as a
                    # Python call costs microseconds on the cold cache a tick wakes to.
                    if self.interval < STEADY_PERIOD:
                        if mono < self._steady_next:
                            due = _FAST_REPEAT
                        else:  # (due half a tick early: jitter)
                            self._steady_next = mono + STEADY_PERIOD - self.interval / 2
                    for source, start, end in self._every_tick:
                        row[start:end] = source.read(due)
                    if stop is not None and stop.is_set():
                        return time.thread_time_ns()
                    self.timeline.append(now, row)
                    if self.remote is not None:
                        self._take_remote()
                self.error = ""
            except Exception as exc:  # contained: the thread must outlive any one bad read
                self.error = f"{type(exc).__name__}: {exc}"
                self._row = None  # (a read of the wrong length): every source next tick
            wall_read = time.perf_counter_ns()
            cpu_read = time.thread_time_ns()
            cost.tick_read(due, cpu_read - cpu_from, wall_from, wall_read)
            self.last_tick_seconds = (wall_read - wall_from) / 1e9
            self.ticks += 1
        if not self._subscribers:
            return cpu_read
        cursor = self.timeline.cursor
        for callback in list(self._subscribers):
            try:
                callback(cursor)
            except Exception as exc:
                self.error = f"subscriber failed: {type(exc).__name__}: {exc}"
        cpu_end = time.thread_time_ns()
        cost.subscribers_ran(cpu_end - cpu_read, wall_read, time.perf_counter_ns())
        return cpu_end

    def cost_report(self) -> CostReport:
        """What the sampler thread took since it started: CPU and wall time by tick class and
        source, and the NVML calls it made."""
        return self.cost.report()

    def _read_all(
        self, now: float, mono: float, stop: threading.Event | None = None
    ) -> frozenset[str]:
        """Every source read, with the cadences due at ``mono``, each one's (and the
        append's) wall time stamped; returns those cadences."""
        due = self._due(mono)
        row: list[float | None] = []
        every_tick = []
        clock = time.perf_counter_ns
        stamps = [clock()]  # before the first source, after each, after the append
        for source in self.sources:
            start = len(row)
            row += source.read(due)
            stamps.append(clock())
            if FAST in getattr(source, "changes_on", _EVERY_TICK):
                every_tick.append((source, start, len(row)))
        if stop is not None and stop.is_set():
            return due
        self._row, self._every_tick = row, every_tick
        self.timeline.append(now, row)
        if self.remote is not None:
            self._take_remote()
        stamps.append(clock())
        self.cost.reads_took(stamps)
        return due

    def _take_remote(self) -> None:
        remote, nodes = self.remote, self.nodes
        if remote is not None and nodes is not None:
            for reading in remote.take():
                nodes.add(reading)

    def _due(self, mono: float) -> frozenset[str]:
        """The cadences due at ``mono`` (FAST always); each due one is scheduled again."""
        if mono < self._soonest:
            return _FAST_ONLY  # most ticks: nothing slower is due
        names = [FAST]
        for cadence, at in self._next.items():
            if mono >= at:
                self._next[cadence] = mono + self.intervals[cadence]
                names.append(cadence)
        self._soonest = min(self._next.values())
        return frozenset(names)

    # -- fork safety ----------------------------------------------------------------------
    def _before_fork(self) -> None:
        self.wait_until_prepared(PREPARE_WAIT)
        # A tick holds the lock through its reads: one stuck in the driver must not hold the
        # fork up (the child gets a fresh lock either way, and runs no sampler)
        self._fork_locked = self._lock.acquire(timeout=FORK_WAIT)
        self.timeline._lock_for_fork()
        self._forked_nodes = self.nodes  # the one whose lock is held, should nodes change
        if self._forked_nodes is not None:
            self._forked_nodes._lock_for_fork()

    def _after_fork(self, child: bool) -> None:
        if self._forked_nodes is not None:
            self._forked_nodes._unlock_after_fork(child)
        self.timeline._unlock_after_fork(child)
        if child:
            # The thread does not exist in the child; leave it stopped, with fresh primitives.
            self._lock = threading.Lock()
            self._stop = threading.Event()
            self._wake = _held_lock()
            self._cell_woke = False
            self._thread = None
            self._at_end, self._end_lock = [None], threading.Lock()
            self._subscribers = []
            self.remote = None  # its worker thread is the parent's
        elif self._fork_locked:
            self._lock.release()


FORK_WAIT = 0.2  # seconds a fork waits at most for a tick to end
PREPARE_WAIT = 5.0  # seconds a cell or a fork waits at most for the timeline to be built


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


def timeline_columns(sources: Sequence[Source]) -> list[str]:
    """The timeline's columns: each source's, in the order :class:`Sampler` fills a row."""
    return [column for source in sources for column in source.columns()]


_live_samplers: weakref.WeakSet[Sampler] = weakref.WeakSet()
_forking: list[Sampler] = []  # the samplers whose locks are held across one fork()


def _before_fork() -> None:
    _forking[:] = list(_live_samplers)
    for sampler in _forking:
        sampler._before_fork()


def _after_fork_parent() -> None:
    for sampler in _forking:
        sampler._after_fork(child=False)
    _forking.clear()


def _after_fork_child() -> None:
    for sampler in _forking:
        sampler._after_fork(child=True)
    _forking.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child
    )
