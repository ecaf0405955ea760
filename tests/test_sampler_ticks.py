"""The sampler's ticks: what a fast tick reads, what it keeps, and how its thread wakes."""

from __future__ import annotations

import math
import time

from nbgpumon._sampling.sampler import SOURCE_TIMING_EVERY, Sampler
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._sources.base import ALLOCATOR, FAST, REPEAT


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


class DueRecording(Counting):
    """A source read every tick that keeps whether each read was told REPEAT."""

    def __init__(self) -> None:
        super().__init__("steady")
        self.repeats: list[bool] = []

    def read(self, due: frozenset[str]) -> list[float | None]:
        self.repeats.append(REPEAT in due)
        return super().read(due)


def _ticks_at(sampler: Sampler, interval: float, times: list[float], monkeypatch) -> None:
    """Ticks at the given monotonic times (each a fast tick), the clock the sampler reads."""
    sampler.interval = interval
    schedule(sampler, allocator_due=False)
    sampler.tick()  # the first tick reads every source whole
    for at in times:
        monkeypatch.setattr(time, "monotonic", lambda at=at: at)
        sampler.tick()
    monkeypatch.undo()


def test_faster_than_the_steady_period_utilization_and_rss_are_fresh_about_every_0_1_s(
    monkeypatch,
):
    source = DueRecording()
    sampler = sampler_of(source)
    start = time.monotonic() + 1000
    # 100 Hz for 0.5 s, with a little jitter, on ticks that are not whole reads
    times = [start + k * 0.01 + (0.001 if k % 3 else 0) for k in range(1, 51)]
    _ticks_at(sampler, 0.01, times, monkeypatch)
    fast = [
        repeat for k, repeat in enumerate(source.repeats[1:], 1) if k % SOURCE_TIMING_EVERY
    ]  # (a tick read whole is always fresh)
    fresh = fast.count(False)
    assert 4 <= fresh <= 7, source.repeats  # about one in ten: 10 Hz, not 100 Hz
    assert sampler.error == ""


def test_at_the_default_interval_every_tick_is_fresh(monkeypatch):
    source = DueRecording()
    sampler = sampler_of(source)
    start = time.monotonic() + 1000
    # 10 Hz with jitter both ways: a tick 5 ms early is still fresh
    times = [start + k * 0.1 + (-0.005 if k % 2 else 0.004) for k in range(1, 31)]
    _ticks_at(sampler, 0.1, times, monkeypatch)
    assert not any(source.repeats), source.repeats


def test_a_repeat_read_asks_nvml_for_memory_alone_and_carries_utilization_and_rss():
    from nbgpumon._sources.devices.nvml.source import FAST_METRICS, NvmlSource
    from nbgpumon._sources.host import HostSource

    from notebook_runner import fake_pynvml

    fake = fake_pynvml(devices=[{"used": 2**30, "util": 42}])
    source = NvmlSource(fake)
    assert source.open()
    fresh = source.read(frozenset({FAST}))

    def counts() -> dict[str, int]:
        calls = {**fake.binding_calls}
        for name, n in fake.c_calls.items():
            calls[name] = calls.get(name, 0) + n
        return calls

    fake._config["devices"][0].update(used=3 * 2**30, util=99)  # the device moves on
    before = counts()
    repeat = source.read(frozenset({FAST, REPEAT}))
    after = counts()
    asked = {k: after.get(k, 0) - before.get(k, 0) for k in after if after[k] != before.get(k)}
    assert asked == {"nvmlDeviceGetMemoryInfo": 1}, asked
    at = FAST_METRICS.index
    assert repeat[at("mem_used")] == 3 * 2**30  # memory read now
    assert repeat[at("gpu_util")] == fresh[at("gpu_util")] == 42  # utilization carried
    assert source.read(frozenset({FAST}))[at("gpu_util")] == 99  # and read on the next fresh tick
    # the calls bound again (a metric disabled elsewhere moves the library's changes): the new
    # binding has read no utilization yet, and a repeat read keeps the last one
    source.library.changes += 1
    fake._config["devices"][0].update(util=7)
    assert source.read(frozenset({FAST, REPEAT}))[at("gpu_util")] == 99
    host = HostSource()
    first = host.read(frozenset({FAST}))
    assert host.read(frozenset({FAST, REPEAT})) is first  # RSS carried: no read at all
