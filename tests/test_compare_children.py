"""Comparing the processes a cell started: two recordings of a bare session whose cell runs a
real child (its GPU memory listed by NVML faked at its boundary), run B's child holding more
and one more child beside it: the comparison says the child's peak moved and the new child,
and flags the cell; on records made here, the thresholds are the memory comparisons' and
children are matched by command, then in order of start."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_recording_children import go_on, recording_session, seen_holding, start_child

import nbgpumon
from nbgpumon._ledger.matching import SAME_SOURCE, Pair
from nbgpumon._ledger.records import CellRecord
from nbgpumon._session.analysis.comparison import (
    CHILD_GONE,
    CHILD_NEW,
    CHILD_PEAK,
    Thresholds,
    compare_pairs,
    match_children,
)
from nbgpumon._sources.processes.children import ChildGpu, ChildUsage
from nbgpumon._views.comparison.words import worded

from waiting import until

GIB, MIB = 2**30, 2**20
CELL = "!python train.py gpu"


def _record_run(tmp_path: Path, name: str, train_gib: float, eval_gib: float | None) -> Path:
    """A recording of one cell that runs train.py holding ``train_gib`` GiB (and eval.py beside
    it, holding ``eval_gib``, when given), children that end within the cell."""
    with recording_session(tmp_path, name) as (session, used):
        opened = session.cells_pipeline.begin(1, CELL)
        kids = [(start_child(tmp_path, used, train_gib), train_gib)]
        if eval_gib is not None:
            kids.append((start_child(tmp_path, used, eval_gib, script="eval.py"), eval_gib))
        for child, gib in kids:
            peak = int(gib * GIB)
            until(lambda c=child, p=peak: seen_holding(session, c.pid, p), f"{gib} GiB seen")
        for child, _ in kids:
            go_on(used, child, 0)
            assert child.wait(timeout=30) == 7
        session.cells_pipeline.end(opened, "ok", "", 1, None)
        path = tmp_path / name

        def written() -> bool:
            try:
                records = nbgpumon.load(path).records
            except nbgpumon.RecordingError:
                return False
            return bool(records) and len(records[0].children) == len(kids)

        until(written, "the cell and its children in the file")
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("children")
    return _record_run(tmp, "a.sqlite", 3, None), _record_run(tmp, "b.sqlite", 4.5, 1)


def test_a_child_holding_more_and_a_new_child_are_said_and_flag_the_cell(two_runs):
    a, b = two_runs
    comparison = nbgpumon.compare(a, b)
    (flagged,) = comparison.regressions
    assert flagged.pair.how == SAME_SOURCE and flagged.label == CELL
    assert flagged.reasons == (
        "children: python train.py gpu peak ≥3.0 GiB → ≥4.5 GiB",
        "children: python eval.py gpu new, peak ≥1.0 GiB",
    )
    assert [s.what for s in flagged.shifts] == [CHILD_PEAK, CHILD_NEW]
    assert (flagged.shifts[0].before, flagged.shifts[0].after) == (3 * GIB, int(4.5 * GIB))
    # the table and the frame say it as the API does
    (row,) = [line for line in repr(comparison).splitlines() if "regression " in line]
    assert "children: python train.py gpu peak ≥3.0 GiB → ≥4.5 GiB" in row
    assert comparison.frame().reason.iloc[0] == flagged.reason
    # and the other way round: B's child gone, its train.py lighter
    (better,) = nbgpumon.compare(b, a).changes
    assert better.verdict == "improved"
    assert better.reasons == (
        "children: python train.py gpu peak ≥4.5 GiB → ≥3.0 GiB",
        "children: python eval.py gpu gone (peak was ≥1.0 GiB)",
    )


def test_a_run_compared_with_itself_says_nothing_of_its_children(two_runs):
    _, b = two_runs
    (same,) = nbgpumon.compare(b, b).changes
    assert (same.verdict, same.reasons) == ("", ())


# -- on records made here --------------------------------------------------------------------
def _child(command: str, gib: float, started: float = 0.0, exact: bool = False, rank=None):
    gpu = ChildGpu(0, round(gib * GIB), exact, 0.25)
    return ChildUsage(1000 + round(started), command, started, started + 1.0, 0, 1, 1, (gpu,),
                      rank=rank, job="j" if rank is not None else "")  # fmt: skip


def _cell(*children: ChildUsage) -> CellRecord:
    return CellRecord(
        index=0, kind="cell", execution_count=1, cell_id=None, label="x", start=0.0,
        duration=1.0, status="ok", error="", devices=(), rss_before=0, rss_after=0,
        rss_peak=0, rss_peak_exact=True, children=children,
    )  # fmt: skip


def _said(a: CellRecord, b: CellRecord, **thresholds) -> tuple[str, tuple[str, ...]]:
    (change,) = worded(compare_pairs([Pair(a, b, SAME_SOURCE)], Thresholds(**thresholds)))
    return change.verdict, change.reasons


def test_a_child_s_peak_is_said_past_the_memory_thresholds_only():
    train = "python train.py"
    # +6.7% of 3 GiB (205 MiB): under the 10%; +0.5 GiB: past both; 10 MiB more of 20: under 64
    assert _said(_cell(_child(train, 3)), _cell(_child(train, 3.2))) == ("", ())
    assert _said(_cell(_child(train, 3)), _cell(_child(train, 3.5))) == (
        "regression", ("children: python train.py peak ≥3.0 GiB → ≥3.5 GiB",),
    )  # fmt: skip
    assert _said(_cell(_child(train, 20 / 1024)), _cell(_child(train, 30 / 1024))) == ("", ())
    assert _said(_cell(_child(train, 3)), _cell(_child(train, 3.5)), memory_bytes=GIB) == ("", ())
    # the driver's accounting is exact: no ≥
    exact = _said(_cell(_child(train, 4, exact=True)), _cell(_child(train, 2, exact=True)))
    assert exact == ("improved", ("children: python train.py peak 4.0 GiB → 2.0 GiB",))


def test_children_are_matched_by_command_then_in_order_of_start():
    a = _cell(_child("python prep.py", 1, 0), _child("python train.py", 2, 1),
              _child("python train.py", 3, 2))  # fmt: skip
    # B: the same commands started in another order, the second train.py now heavier
    b = _cell(_child("python train.py", 2, 0), _child("python prep.py", 1, 1),
              _child("python train.py", 5, 2))  # fmt: skip
    pairs = match_children(a.children, b.children)
    assert [(one.started, two.started) for one, two in pairs] == [(0, 1), (1, 0), (2, 2)]
    assert _said(a, b) == (
        "regression", ("children: python train.py peak ≥3.0 GiB → ≥5.0 GiB",),
    )  # fmt: skip


def test_a_job_s_ranks_are_matched_rank_by_rank():
    worker = "python train.py --config configs/large-model.yaml"  # cut at 40 characters
    a = _cell(_child(worker, 4, 0, rank=0), _child(worker, 4, 1, rank=1))
    # rank 1 started first in B, and rank 0 grew
    b = _cell(_child(worker, 4, 0, rank=1), _child(worker, 6, 1, rank=0))
    assert _said(a, b) == (
        "regression",
        ("children: python train.py --config configs/large-… (rank 0) peak ≥4.0 GiB → ≥6.0 GiB",),
    )


def test_a_small_child_appearing_or_gone_is_said_without_a_verdict():
    small = _child("nvidia-smi", 8 / 1024)
    assert _said(_cell(), _cell(small)) == ("", ("children: nvidia-smi new, peak ≥8.0 MiB",))
    assert _said(_cell(small), _cell()) == ("", ("children: nvidia-smi gone (peak was ≥8.0 MiB)",))
    (change,) = compare_pairs([Pair(_cell(small), _cell(), SAME_SOURCE)], Thresholds())
    (shift,) = change.shifts
    assert shift.what == CHILD_GONE and shift.children == (small, None)
    assert (shift.before, shift.after) == (small.peak, 0)


def test_a_child_is_said_beside_the_cell_s_own_regression():
    a = _cell(_child("python train.py", 3))
    b = dataclasses.replace(_cell(), duration=10.0)  # slower, and its child gone
    verdict, reasons = _said(a, b)
    assert verdict == "regression"
    assert reasons == (
        "slower ×10.0 (+9.0 s)",
        "children: python train.py gone (peak was ≥3.0 GiB)",
    )
