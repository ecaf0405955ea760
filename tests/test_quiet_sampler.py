"""The sampler waits its idle interval while nothing moves, and only then."""

from __future__ import annotations

import time

from nbgpumon._sampling.quiet import RSS_MOVED, QuietWatch
from nbgpumon._sampling.sampler import Sampler
from nbgpumon._sampling.timeline import Timeline

COLUMNS = ["gpu0.nvml.mem_used", "gpu0.nvml.gpu_util", "host.rss"]


def watch(after: float = 1.0, busy: bool = False) -> QuietWatch:
    return QuietWatch(
        COLUMNS, ["gpu0.nvml.mem_used"], ["gpu0.nvml.gpu_util"], "host.rss",
        busy=lambda: busy, after=after,
    )  # fmt: skip


def test_it_is_quiet_only_after_nothing_moved_for_its_seconds():
    w = watch(after=1.0)
    still = [2e9, 0.0, 5e8]
    assert not w.after_tick(still, 100.0)  # (its first values: they moved)
    assert not w.after_tick(still, 100.5)
    assert w.after_tick(still, 101.0) and w.asleep
    # the RSS moving less than RSS_MOVED since it last moved is still
    assert w.after_tick([2e9, 0.0, 5e8 + RSS_MOVED - 4096], 101.5)
    # any of these moving puts it back on its interval
    for moved in ([2e9 + 2**21, 0.0, 5e8], [2e9, 3.0, 5e8], [2e9, 0.0, 5e8 + 2 * RSS_MOVED]):
        w = watch(after=1.0)
        w.after_tick(still, 100.0)
        assert w.after_tick(still, 101.0)
        assert not w.after_tick(moved, 101.1) and not w.asleep
        assert not w.after_tick(moved, 101.2)  # its seconds count from the move
        busy_gpu = moved[1] > 0
        assert w.after_tick(moved, 102.2) is not busy_gpu  # a busy GPU stays awake


def test_a_running_cell_a_busy_child_a_failed_tick_or_no_idle_interval_keep_it_awake():
    still = [2e9, 0.0, 5e8]
    w = watch(after=0.0)
    w.after_tick(still, 1.0)
    assert w.after_tick(still, 2.0)
    w.cell_running = True
    assert not w.after_tick(still, 3.0)
    w.cell_running = False
    assert w.after_tick(still, 4.0)
    assert not w.after_tick(None, 5.0)  # a tick that read nothing
    w.idle_interval = 0.0
    assert not w.after_tick(still, 6.0)
    busy = watch(after=0.0, busy=True)
    busy.after_tick(still, 1.0)
    assert not busy.after_tick(still, 2.0)


def test_a_cell_that_began_and_ended_between_two_ticks_counts_as_a_move():
    still = [2e9, 0.0, 5e8]
    w = watch(after=1.0)
    w.after_tick(still, 100.0)
    assert w.after_tick(still, 101.0)
    w.cells_begun += 1  # (its start and its end both between the ticks: cell_running False)
    assert not w.after_tick(still, 101.1) and not w.asleep
    assert not w.after_tick(still, 101.6)  # its seconds count from the tick that saw it
    assert w.after_tick(still, 102.1)


def test_its_share_of_the_time_counts_the_waits_it_said_were_quiet():
    w = watch(after=1.0)
    still = [2e9, 0.0, 5e8]
    for t in (0.0, 0.5, 1.0, 3.0, 5.0):
        w.after_tick(still, t)
    assert w.watched_seconds == 5.0
    assert w.quiet_seconds == 4.0  # the two waits after the tick at 1.0 that said quiet
    assert w.quiet_share(7.0) == 6.0 / 7.0  # the wait under way counted too


class Settable:
    """A source whose one value the test sets; it counts its reads."""

    name, status, metrics = "set", "ok", ()

    def __init__(self) -> None:
        self.value, self.reads = 1.0, 0

    def columns(self) -> list[str]:
        return ["host.rss"]

    def read(self, due: frozenset[str]) -> list[float | None]:
        self.reads += 1
        return [self.value]


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_running_sampler_slows_when_still_and_a_move_or_a_cell_wakes_it():
    source = Settable()
    sampler = Sampler([source], Timeline(["host.rss"]), interval=0.02)
    sampler.quiet = QuietWatch(["host.rss"], [], [], "host.rss", idle_interval=30.0, after=0.1)
    sampler.start()
    try:
        assert wait_for(lambda: sampler.quiet.asleep)
        asleep_at = sampler.ticks
        time.sleep(0.3)  # (it waits 30 s now: no tick meanwhile)
        assert sampler.ticks == asleep_at
        # a cell's start: a tick an interval later, not 30 s later
        sampler.quiet.cell_running = True
        sampler.wake_for_cell()
        assert wait_for(lambda: sampler.ticks >= asleep_at + 3)  # its interval while it runs
        assert not sampler.quiet.asleep
        sampler.quiet.cell_running = False
        assert wait_for(lambda: sampler.quiet.asleep)
        # a value that moves is seen at the next quiet tick: there, 30 s on; a set_interval
        # wakes it at once, as before, and the move keeps it on its interval
        source.value = 1.0 + 2 * RSS_MOVED
        sampler.set_interval(0.02)
        assert wait_for(lambda: not sampler.quiet.asleep)
        woke_at = sampler.ticks
        assert wait_for(lambda: sampler.ticks >= woke_at + 3)
    finally:
        sampler.stop()
