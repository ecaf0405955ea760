"""The sampler's ticks: what a fast tick reads, what it keeps, and how its thread wakes."""

from __future__ import annotations

import math
import time

from nbgpumon._sampling.sampler import Sampler
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._sources.base import ALLOCATOR, FAST


class Counting:
    """A source that counts its reads and answers with that count."""

    status = "ok"
    metrics = ()

    def __init__(self, name: str, width: int = 1) -> None:
        self.name, self.width, self.reads = name, width, 0

    def columns(self) -> list[str]:
        return [f"host.{self.name}{k}" for k in range(self.width)]

    def read(self, due: frozenset[str]) -> list[float | None]:
        self.reads += 1
        return [float(self.reads)] * self.width


class AllocatorLike(Counting):
    changes_on = frozenset({ALLOCATOR})  # its values change only when ALLOCATOR is due


def schedule(sampler: Sampler, allocator_due: bool) -> None:
    sampler._next = {
        c: (0.0 if allocator_due and c == ALLOCATOR else math.inf) for c in sampler._next
    }
    sampler._soonest = min(sampler._next.values())


def sampler_of(*sources: Counting) -> Sampler:
    return Sampler(list(sources), Timeline([c for s in sources for c in s.columns()]))


def test_a_fast_tick_reads_only_the_sources_read_every_tick_and_keeps_the_others_values():
    every, allocator = Counting("every", 2), AllocatorLike("alloc")
    sampler = sampler_of(every, allocator)
    due_at = {0, 7, 40}  # ticks when the allocator cadence is due
    for k in range(48):
        schedule(sampler, allocator_due=k in due_at)
        sampler.tick()
    assert sampler.error == ""
    assert every.reads == 48
    # read on its own ticks, and on the one fast tick in SOURCE_TIMING_EVERY read whole
    assert allocator.reads == len(due_at | {16, 32})
    rows = sampler.timeline.since(0).values.tolist()
    assert [r[0] for r in rows] == [float(k + 1) for k in range(48)]
    # its column holds what its last read said, on every row
    assert [r[2] for r in rows[:7]] == [1.0] * 7 and rows[7][2] == 2.0 and rows[47][2] == 5.0


class Wrong(Counting):
    def read(self, due: frozenset[str]) -> list[float | None]:
        self.reads += 1
        return [1.0, 2.0] if self.reads == 3 else [1.0]  # once, a row of the wrong width


def test_a_read_of_the_wrong_width_costs_that_tick_only():
    wrong, allocator = Wrong("wrong"), AllocatorLike("alloc")
    sampler = sampler_of(wrong, allocator)
    for _ in range(2):
        schedule(sampler, allocator_due=False)
        sampler.tick()
    schedule(sampler, allocator_due=False)
    sampler.tick()  # the wrong one
    assert sampler.error.startswith("ValueError: a row of 3 values for 2 columns")
    reads = allocator.reads
    schedule(sampler, allocator_due=False)
    sampler.tick()
    assert sampler.error == "" and sampler.timeline.cursor == 3
    assert allocator.reads == reads + 1  # the row was rebuilt from every source


def test_a_new_interval_wakes_the_sleeping_thread_and_stop_ends_it():
    sampler = sampler_of(Counting("every"))
    sampler.interval = 60.0
    sampler.start()
    try:
        assert sampler.wait_for_first_tick(10.0)
        sampler.set_interval(0.01)  # without waking, the next tick would be a minute away
        deadline = time.monotonic() + 10
        while sampler.ticks < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert sampler.ticks >= 5
    finally:
        sampler.stop(timeout=10.0)
    assert not sampler.running
    assert FAST in sampler.cost_report().groups
