"""The cell path's own account of its cost (issue 43): each cell's stages timed on the main
thread, the last cells' kept in a fixed array, and ``%gpumon status`` saying it in one line."""

from __future__ import annotations

import re

import pytest

from nbgpumon import Monitor
from nbgpumon._session import cell_clock
from nbgpumon._session.cell_clock import STAGES, CellClock, CellPathCost, StageCost
from nbgpumon._views.status.cell_path import cell_path_line

from fake_shell import shell_with
from notebook_runner import fake_pynvml, run_cells


@pytest.fixture
def ticks(monkeypatch):
    """The clock's time, in nanoseconds, moved by the test."""
    now = [0]
    monkeypatch.setattr(cell_clock, "perf_counter_ns", lambda: now[0])
    return now


def _cell(clock: CellClock, now: list[int], start_ns: int, end_ns: int, ran_ns: int) -> None:
    """One cell: its start readings took ``start_ns``, its own code ``ran_ns`` (no stage),
    its end readings ``end_ns``."""
    clock.start()
    now[0] += start_ns
    clock.lap(cell_clock.START_READINGS)
    now[0] += ran_ns
    clock.resume()
    now[0] += end_ns
    clock.lap(cell_clock.END_READINGS)
    clock.done()


def test_nothing_is_said_before_the_first_cell():
    assert CellClock().report() is None
    assert cell_path_line(None) == "cell path: no cell measured yet"


def test_each_stage_gets_the_time_since_the_last_lap_and_the_cell_s_own_code_none(ticks):
    clock = CellClock()
    _cell(clock, ticks, start_ns=30_000, end_ns=50_000, ran_ns=10**9)
    report = clock.report()
    assert report == CellPathCost(
        cells=1,
        median=80e-6,  # the second the cell ran for is not the path's
        p99=80e-6,
        stages=(StageCost("end readings", 50e-6, 50e-6), StageCost("start readings", 30e-6, 30e-6)),
    )


def test_only_the_last_cells_are_kept_and_the_figures_are_theirs(ticks):
    clock = CellClock(keep=5)
    for _ in range(20):  # costly cells first, then five cheap ones: only those are kept
        _cell(clock, ticks, start_ns=900_000, end_ns=900_000, ran_ns=1)
    for k in range(5):
        _cell(clock, ticks, start_ns=10_000 * (k + 1), end_ns=0, ran_ns=1)
    report = clock.report()
    assert report.cells == 5
    assert report.median == pytest.approx(30e-6)  # 10, 20, 30, 40, 50 µs
    assert report.p99 == pytest.approx(49.6e-6)
    assert [s.stage for s in report.stages] == ["start readings"]  # end readings cost nothing
    assert len(clock._times) == 5 * len(STAGES)  # the array never grows


def test_the_line_names_the_costliest_stages_first():
    cost = CellPathCost(
        cells=200,
        median=61e-6,
        p99=0.12e-3,
        stages=(StageCost("end readings", 21e-6, 40e-6), StageCost("kinds", 19e-6, 31e-6)),
    )
    assert cell_path_line(cost) == (
        "cell path: 0.061 ms a cell (p99 0.120 ms) over the last 200 cells: "
        "end readings 0.021 ms (p99 0.040), kinds 0.019 ms (p99 0.031)"
    )


def test_status_says_what_the_last_cells_cost_beside_the_sampler_s_share():
    runs = run_cells(["%load_ext nbgpumon", *[f"x = {k}" for k in range(5)], "%gpumon status"])
    lines = runs[-1].text.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("sampler cost:"))
    found = re.fullmatch(
        r"cell path: ([\d.]+) ms a cell \(p99 ([\d.]+) ms\) over the last (\d+) cells"
        r"(; replies waited for ([\d.]+) ms \(p99 ([\d.]+)\))?: (.*)",
        lines[at + 1],
    )
    assert found, lines[at + 1]
    median, p99, cells = float(found[1]), float(found[2]), int(found[3])
    assert 0 < median <= p99 and cells == 5  # the five cells after the load's
    if found[4]:  # (some cell's end finished while the kernel was idle: the reply waited less)
        waited, waited_p99 = float(found[5]), float(found[6])
        assert 0 < waited <= median and waited <= waited_p99 <= p99
    stages = [re.sub(r" [\d.]+ ms \(p99 [\d.]+\)$", "", part) for part in found[7].split(", ")]
    assert set(stages) <= set(STAGES), stages
    assert "start readings" in stages and "end readings" in stages


def test_a_cell_whose_end_came_after_its_reply_counts_whole_and_as_waited_for_in_part(ticks):
    clock = CellClock()
    _cell(clock, ticks, start_ns=30_000, end_ns=50_000, ran_ns=1)  # ended before its reply
    clock.start()  # a quiet cell: 10 µs of readings at each edge, then the reply, then 40 µs
    ticks[0] += 10_000
    clock.lap(cell_clock.START_READINGS)
    clock.resume()
    ticks[0] += 10_000
    clock.lap(cell_clock.END_READINGS)
    clock.replied()
    ticks[0] += 5_000_000  # (the kernel idle between the reply and the put-off end)
    clock.resume()
    ticks[0] += 40_000
    clock.lap(cell_clock.KINDS)
    clock.done()
    report = clock.report()
    assert (report.cells, report.median) == (2, pytest.approx(70e-6))  # 80 and 60 µs in all
    assert report.p99 == pytest.approx(79.8e-6)
    # what the replies waited for: 80 µs, and the quiet cell's 20 µs
    assert report.waited_median == pytest.approx(50e-6)
    assert report.waited_p99 == pytest.approx(79.4e-6)
    line = cell_path_line(report)
    assert line.startswith(
        "cell path: 0.070 ms a cell (p99 0.080 ms) over the last 2 cells; "
        "replies waited for 0.050 ms (p99 0.079): "
    ), line


def test_an_end_finished_at_the_next_cell_s_start_counts_as_waited_for(ticks):
    clock = CellClock()
    _cell(clock, ticks, start_ns=30_000, end_ns=50_000, ran_ns=1)
    clock.start()  # a quiet cell: its reply, then the next cell's start finishes its end
    ticks[0] += 10_000
    clock.lap(cell_clock.START_READINGS)
    clock.replied()
    clock.resume()
    ticks[0] += 40_000
    clock.lap(cell_clock.KINDS)
    clock.done(waited_for=True)
    report = clock.report()
    assert (report.cells, report.median) == (2, pytest.approx(65e-6))
    assert (report.waited_median, report.waited_p99) == (None, None)  # all of it waited for


def test_no_waited_figure_where_every_reply_waited_for_its_whole_path(ticks):
    clock = CellClock()
    _cell(clock, ticks, start_ns=30_000, end_ns=50_000, ran_ns=1)
    report = clock.report()
    assert (report.waited_median, report.waited_p99) == (None, None)
    assert "replies waited" not in cell_path_line(report)


def test_a_put_off_end_the_next_cell_s_start_finishes_was_waited_for_by_that_cell():
    mon = Monitor(nvml_module=fake_pynvml(devices=[{"name": "Fake H100"}]))
    try:
        pipeline = mon._session.cells_pipeline
        pipeline._shell = lambda: shell_with(x=0)  # (a kernel's: a quiet cell's end is put off)
        put_off: list = []

        def after_reply(call) -> bool:
            put_off.append(call)
            return True

        clock = pipeline.clock
        opened = pipeline.begin(1, "x = 1")
        assert pipeline.end(opened, "ok", "", 1, None, after_reply=after_reply) is None
        clock.replied()  # (as the cell hooks say it)
        opened = pipeline.begin(2, "x = 2")  # sent at once: its start finishes cell 1's end
        assert pipeline.end(opened, "ok", "", 2, None, after_reply=after_reply) is None
        clock.replied()
        put_off[-1]()  # cell 2's end, finished after its reply while the kernel was idle
        (waited_1, waited_2), (total_1, total_2) = clock._waited[:2], clock._totals[:2]
        assert 0 < waited_1 == total_1  # cell 2's reply waited for it
        assert 0 < waited_2 < total_2
        assert [r.label for r in mon.cells()] == ["x = 1", "x = 2"]
    finally:
        mon.close()
