"""The sampler measures its own cost: its thread's CPU time by tick class and source, the
share of a core, and NVML's calls; `%gpumon status` says it."""

from __future__ import annotations

import dataclasses
import re
import time

from nbgpumon._sampling.sampler import SOURCE_TIMING_EVERY, Sampler
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._sources.base import DETAIL
from nbgpumon._views.status.sampler_cost import cost_line

from notebook_runner import fake_nvml_env, run_cells

BURN = 0.002  # seconds of CPU a detail read takes here


def burn(seconds: float) -> None:
    """Busy CPU for ``seconds`` of this thread's CPU time (not wall time)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Busy:
    """A source whose detail reads cost BURN seconds of CPU; its fast reads nothing."""

    name = "busy"
    metrics = ()
    status = "ok"

    def columns(self) -> list[str]:
        return ["host.busy"]

    def read(self, due: frozenset[str]) -> list[float | None]:
        if DETAIL in due:
            burn(BURN)
        return [1.0]


class Idle(Busy):
    name = "idle"

    def read(self, due: frozenset[str]) -> list[float | None]:
        return [0.0]


def ticked(n: int, detail_every: int) -> Sampler:
    sources = [Busy(), Idle()]
    sampler = Sampler(sources, Timeline(["host.busy", "host.idle"]))
    for k in range(n):
        due_detail = k % detail_every == 0
        sampler._next = {c: (0.0 if (c == DETAIL and due_detail) else float("inf"))
                         for c in sampler._next}  # fmt: skip
        sampler._soonest = min(sampler._next.values())
        sampler.tick()
    return sampler


def test_each_tick_class_is_charged_the_cpu_its_reads_took():
    report = ticked(40, detail_every=4).cost_report()
    detail, fast = report.groups["detail"], report.groups["fast"]
    assert (detail.ticks, fast.ticks, report.ticks) == (10, 30, 40)
    assert detail.cpu_per_tick >= BURN > fast.cpu_per_tick * 10
    assert report.cpu_seconds >= 10 * BURN
    # a source's wall time is its reads': the busy one took the burns, the idle one nothing;
    # reads are timed on every slower tick and on one fast tick in SOURCE_TIMING_EVERY
    assert report.sources["busy"].wall_seconds >= 10 * BURN
    assert report.sources["idle"].wall_seconds < BURN
    timed = [k for k in range(40) if k % 4 == 0 or k % SOURCE_TIMING_EVERY == 0]
    assert report.sources["busy"].ticks == len(timed) == 10
    assert report.sources["busy"].wall_per_tick >= BURN
    assert 0 < report.core_share <= 1.0


def test_the_share_of_a_core_is_cpu_over_the_time_it_ticked():
    # every tick burns: nearly all of the wall time, whatever share of a core this thread gets
    # on a busy machine; the report's share is what this thread's own clocks say
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    sampler = ticked(20, detail_every=1)
    measured = (time.thread_time() - cpu0) / (time.perf_counter() - wall0)
    report = sampler.cost_report()
    assert measured * 0.8 <= report.core_share <= min(1.0, measured * 1.25), (report, measured)
    line = cost_line(report)
    assert report.seconds < 1.0  # 20 ticks of a few ms: too soon to say a share of a core
    assert line.startswith(f"sampler cost: 20 ticks in {report.seconds:.1f} s, too soon for a ")
    assert "CPU/tick ×20" in line and "fast" not in line  # only detail ticks ran
    later = dataclasses.replace(report, seconds=report.seconds * 100)  # as if ticking longer
    early = dataclasses.replace(
        report, seconds=0.05, device_calls=300, device_gil_kept_calls=100, device_label="NVML"
    )
    # too soon for a rate too: the calls are counted, not divided by a tick's length
    assert cost_line(early).endswith(", 300 NVML calls (100 keeping the GIL)"), cost_line(early)
    assert cost_line(later).startswith(
        f"sampler cost: {later.core_share * 100:.3g}% of a core over "
    )
    sampler.cost.reset()
    assert sampler.cost_report().ticks == 0
    assert cost_line(sampler.cost_report()) == "sampler cost: no tick yet"


def test_status_says_what_the_sampler_costs_in_a_real_kernel():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import time, nbgpumon\n_m = nbgpumon.monitor()\n_d = time.monotonic() + 30\n"
            "while _m._session.sampler.ticks < 25 and time.monotonic() < _d:\n    time.sleep(0.02)",
            "%gpumon status",
        ],
        env=fake_nvml_env(devices=[{"name": "Fake H200"}]),
    )
    (line,) = [s for s in runs[2].text.splitlines() if s.startswith("sampler cost: ")]
    assert "% of a core over " in line and "fast " in line
    calls, kept = re.search(r", (\d+) NVML calls/s \((\d+) keeping the GIL\)$", line).groups()
    assert 0 < int(kept) < int(calls), line  # the fast tick's keep it, the detail and slow don't
