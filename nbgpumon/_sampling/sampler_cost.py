"""What the sampler costs, measured where the cost is: the sampler thread's own CPU time.

Each tick is classed by the slowest cadence it read (a ``fast`` tick read memory and
utilization only; a ``detail`` tick also temperature, power, clocks and PCIe; and so on). The
thread reads its CPU clock (``time.thread_time_ns``) once a tick, at the end of its reads, and
charges the tick everything since the previous tick's end: its wait and wake-up, its reads,
the timeline's append and this accounting, so the sums are all the CPU time the thread took
(a tick called directly, outside the thread, is charged from its own start). The wall time of
its reads is added to its class; each source's read and the timeline's append (``timeline``)
are stamped on every slower tick and on one fast tick in ``SOURCE_TIMING_EVERY``, their mean
wall time per read kept; what the subscribers (the widget's publisher, the static view) take
after the reads goes to ``subscribers``. The share of a core is the thread's CPU time over the
wall time it ran for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .._sources.base import ALLOCATOR, CADENCES, DETAIL, FAST, SLOW

SUBSCRIBERS = "subscribers"
TIMELINE = "timeline"  # a tick's own work after its sources: the append, the cluster's rows
_ORDER = {FAST: 0, ALLOCATOR: 1, DETAIL: 2, SLOW: 3}  # the slowest due cadence names a tick
_KIND: dict[frozenset[str], str] = {}  # a tick's due cadences -> its class, as first worked out


@dataclass(frozen=True, slots=True)
class GroupCost:
    """Ticks of one class (or one source, or the subscribers) and what they took."""

    ticks: int
    cpu_seconds: float  # the sampler thread's CPU time (0 for a source: wall only)
    wall_seconds: float

    @property
    def cpu_per_tick(self) -> float:
        return self.cpu_seconds / self.ticks if self.ticks else 0.0

    @property
    def wall_per_tick(self) -> float:
        return self.wall_seconds / self.ticks if self.ticks else 0.0


@dataclass(frozen=True, slots=True)
class CostReport:
    """The sampler's cost since it (last) started (in words: ``_views/status/sampler_cost.py``)."""

    seconds: float  # wall time from the first tick counted to the end of the latest
    ticks: int
    cpu_seconds: float  # the sampler thread's CPU time in ticks and subscribers
    groups: dict[str, GroupCost] = field(default_factory=dict)  # fast, allocator, …, subscribers
    # each source's read, wall time, over the reads timed (SOURCE_TIMING_EVERY)
    sources: dict[str, GroupCost] = field(default_factory=dict)
    device_calls: int = 0  # the device source's library calls meanwhile, by any thread
    # ... of which kept the GIL (NVML's fast tick's: memory, utilization)
    device_gil_kept_calls: int = 0
    device_label: str = ""  # how users write the device source ("NVML")

    @property
    def core_share(self) -> float:
        """Fraction of one core the sampler thread used (0.0003 is 0.03%)."""
        return self.cpu_seconds / self.seconds if self.seconds > 0 else 0.0

    @property
    def device_calls_per_second(self) -> float:
        return self.device_calls / self.seconds if self.seconds > 0 else 0.0

    @property
    def tick_groups(self) -> dict[str, GroupCost]:
        """The tick classes that ran (fast, allocator, …), the subscribers left out."""
        return {name: g for name, g in self.groups.items() if g.ticks and name != SUBSCRIBERS}

    @property
    def subscribers(self) -> GroupCost | None:
        """What the subscribers (the widget's publisher, the static view) took after the reads."""
        return self.groups.get(SUBSCRIBERS)


class SamplerCost:
    """The running sums; written by the sampler thread only, read by anyone."""

    def __init__(self, sources: Sequence[object]) -> None:
        self._names = [str(getattr(s, "name", type(s).__name__)) for s in sources]
        self._names.append(TIMELINE)  # the row's append (and the cluster's), after the reads
        self._lock = threading.Lock()
        # the device source's calls so far (all, and those that kept the GIL), and its label
        self.device_counter: Callable[[], tuple[int, int]] | None = None
        self.device_label = ""
        self.reset()

    def reset(self) -> None:
        """Start counting again (the sampler thread starts, or a benchmark asks)."""
        with self._lock:
            self._started: int | None = None  # perf_counter ns of the first tick counted
            self._last = 0  # ... and of the end of the latest
            self._ticks = 0
            self._group = {name: [0, 0, 0] for name in (*CADENCES, SUBSCRIBERS)}  # ticks, cpu, wall
            self._source = [[0, 0] for _ in self._names]  # reads timed, wall ns
            self._calls0 = self.device_counter() if self.device_counter is not None else (0, 0)

    # -- the sampler thread ---------------------------------------------------------------
    def started_thread(self) -> int:
        """The thread starts ticking: its CPU clock now (ns), which its first tick is charged
        from."""
        with self._lock:
            if self._started is None:
                self._started = time.perf_counter_ns()
        return time.thread_time_ns()

    def reads_took(self, stamps: list[int]) -> None:
        """``perf_counter_ns`` before the first source's read and after each (then after the
        timeline's append); a tick cut short by an exception gives fewer."""
        for entry, start, end in zip(self._source, stamps, stamps[1:], strict=False):
            entry[0] += 1
            entry[1] += end - start

    def tick_read(self, due: frozenset[str], cpu_ns: int, wall_from: int, wall_to: int) -> None:
        """A tick took ``cpu_ns`` of the thread's CPU; its reads ran from ``wall_from`` to
        ``wall_to`` (``perf_counter_ns``)."""
        kind = _KIND.get(due)  # the sampler passes the same few frozensets: looked up, not sorted
        if kind is None:
            kind = _KIND[due] = max(due, key=lambda c: _ORDER.get(c, -1)) if due else FAST
        with self._lock:
            if self._started is None:
                self._started = wall_from
            group = self._group[kind]
            group[0] += 1
            group[1] += cpu_ns
            group[2] += wall_to - wall_from
            self._ticks += 1
            self._last = wall_to

    def subscribers_ran(self, cpu_ns: int, wall_from: int, wall_to: int) -> None:
        with self._lock:
            group = self._group[SUBSCRIBERS]
            group[0] += 1
            group[1] += cpu_ns
            group[2] += wall_to - wall_from
            self._last = wall_to

    # -- anyone ---------------------------------------------------------------------------
    def report(self) -> CostReport:
        with self._lock:
            if self._started is None:
                return CostReport(0.0, 0, 0.0)
            seconds = (self._last - self._started) / 1e9  # while it ticked
            groups = {
                name: GroupCost(int(n), cpu / 1e9, wall / 1e9)
                for name, (n, cpu, wall) in self._group.items()
            }
            sources = {
                name: GroupCost(int(n), 0.0, wall / 1e9)
                for name, (n, wall) in zip(self._names, self._source, strict=True)
            }
            cpu = sum(g.cpu_seconds for g in groups.values())
            calls, kept = self.device_counter() if self.device_counter is not None else self._calls0
            return CostReport(
                seconds,
                self._ticks,
                cpu,
                groups,
                sources,
                calls - self._calls0[0],
                kept - self._calls0[1],
                self.device_label,
            )
