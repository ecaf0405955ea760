"""Comparing two runs: two recordings of one notebook in real kernels, where run B keeps three
times the host memory in one cell and adds a cell: that cell, and only it, is a regression, the
new cell is only in B; an old-schema recording compares too; bad input is one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbgpumon
from nbgpumon._api import current
from nbgpumon._ledger.matching import EDITED, ONLY_IN_B, SAME_FIRST_LINE, SAME_SOURCE, Pair
from nbgpumon._ledger.records import CellRecord
from nbgpumon._session.analysis.comparison import Thresholds, compare_pairs
from nbgpumon._views.comparison.words import worded

from compare_runs import EXTRA, KEEP_A, KEEP_B, SAMPLED, THREE_TIMES_KEPT
from notebook_runner import run_cells

DATA = Path(__file__).parent / "data"
MIB = 2**20
COMMON = ["import numpy as np", "total = sum(range(10_000))", "print(total)"]


def _notebook(path: Path, keep: str, extra: list[str]) -> list[str]:
    return [
        "%load_ext nbgpumon",
        f"%gpumon record {path}",
        COMMON[0],
        keep,
        *extra,
        *COMMON[1:],
        SAMPLED,
    ]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run A, then run B (the changed cell and one more), each recorded; B ends comparing
    itself live against A with %gpumon compare, and A against B from two paths."""
    tmp = tmp_path_factory.mktemp("compare")
    a, b = tmp / "a.sqlite", tmp / "b.sqlite"
    run_cells([*_notebook(a, KEEP_A, []), "%gpumon record off"])
    runs = run_cells(
        [
            *_notebook(b, KEEP_B, [EXTRA]),
            "%gpumon record off",
            f"A = {str(a)!r}\n%gpumon compare $A",
            f"%gpumon compare '{a}' {{str({str(b)!r})}}",
        ]
    )
    return a, b, runs


def test_the_cell_keeping_three_times_the_memory_is_the_one_regression(two_runs):
    a, b, _ = two_runs
    comparison = nbgpumon.compare(a, b)
    (flagged,) = comparison.regressions
    assert (flagged.pair.a.label, flagged.pair.b.label) == (KEEP_A, KEEP_B)
    assert flagged.pair.how == EDITED
    assert flagged.b.host_kept == pytest.approx(3 * flagged.a.host_kept, rel=0.05)
    assert flagged.a.host_kept == pytest.approx(100 * MIB, rel=0.05)
    assert any(re.fullmatch(THREE_TIMES_KEPT, reason) for reason in flagged.reasons)
    # every other cell is matched by its source, or only in B, and not flagged
    others = [c for c in comparison.changes if c is not flagged]
    assert {c.verdict for c in others} == {""}
    assert {c.label: c.pair.how for c in others if c.pair.how != EDITED} == {
        **{code: SAME_SOURCE for code in COMMON},
        SAMPLED.splitlines()[0]: SAME_SOURCE,
        EXTRA: ONLY_IN_B,
    }
    assert [r.label for r in comparison.only_in_b] == [EXTRA]
    assert comparison.only_in_a == []


def test_the_frame_has_a_row_per_pair_with_both_runs_and_the_change(two_runs):
    a, b, _ = two_runs
    frame = nbgpumon.compare(a, b).frame()
    row = frame[frame.label == KEEP_B].iloc[0]
    assert row.verdict == "regression" and row.match == EDITED
    assert row.host_kept_change == row.host_kept_b - row.host_kept_a
    assert row.host_kept_change == pytest.approx(200 * MIB, rel=0.05)
    extra = frame[frame.label == EXTRA].iloc[0]
    assert (extra.match == ONLY_IN_B and extra.cell_a is None) or str(extra.cell_a) == "<NA>"
    assert list(frame.columns[:3]) == ["kind", "cell_a", "cell_b"]
    assert not any(c.startswith(("torch", "jax", "cupy")) for c in frame.columns)  # none ran
    assert len(frame) == len(frame.drop_duplicates(subset=["index_a", "index_b"]))


def test_gpumon_compare_prints_the_table_in_the_kernel(two_runs):
    a, b, runs = two_runs
    live, paths = runs[-2], runs[-1]
    for run, source_b in ((live, "live session"), (paths, f"{b} (session 1)")):
        assert run.error is None and not run.stderr, run.text
        text = run.stdout
        assert f"A: {a} (session 1)" in text and f"B: {source_b}" in text
        (flagged,) = [line for line in text.splitlines() if "regression " in line]
        assert re.search(THREE_TIMES_KEPT, flagged) and "keep = np.ones(3 * 100" in flagged
        (alone,) = [line for line in text.splitlines() if EXTRA[:30] in line]
        assert "only in B" in alone
    assert "1 regression," in paths.stdout and "0 only in A, 1 only in B" in paths.stdout


def test_thresholds_are_keyword_arguments(two_runs):
    a, b, _ = two_runs
    # the memory thresholds are the subject: no cell is slower by an hour on any machine, but
    # a loaded one made a 0.2 s cell 1 s slower, flagged at the default time thresholds
    calm = {"duration_seconds": 3600.0}
    assert nbgpumon.compare(a, b, memory_bytes=512 * MIB, **calm).regressions == []
    assert nbgpumon.compare(a, b, memory_ratio=5.0, **calm).regressions == []  # ×3: not +500%
    assert len(nbgpumon.compare(a, b, **calm).regressions) == 1  # the ×3 cell, by its memory


def test_an_old_schema_recording_compares_by_first_line():
    old = DATA / "recorded-v3.sqlite"
    comparison = nbgpumon.compare(old, str(old))
    cells = [c for c in comparison.changes if c.pair.kind == "cell"]
    assert cells and {c.pair.how for c in cells} == {SAME_FIRST_LINE}
    assert all(c.pair.a.index == c.pair.b.index for c in comparison.changes)  # itself
    assert comparison.regressions == [] and comparison.only_in_a == comparison.only_in_b == []
    assert "same first line" in repr(comparison)


def test_an_old_schema_recording_compares_with_a_new_one(two_runs):
    a, _, _ = two_runs
    comparison = nbgpumon.compare(DATA / "recorded-v3.sqlite", a)
    numpy_rows = [c for c in comparison.changes if c.label == "import numpy as np"]
    # the old run imported numpy twice; the new one once: the first pairs, in order
    assert [c.pair.how for c in numpy_rows] == [SAME_FIRST_LINE, "only in A"]
    assert numpy_rows[0].pair.a.execution_count == 3


def test_the_report_page_is_self_contained_and_escapes_cell_sources(tmp_path):
    runs = {}
    for name, code in (("a", "x = '<script>alert(1)</script>'"), ("b", "y = '<b>bold</b>'")):
        runs[name] = tmp_path / f"{name}.sqlite"
        run_cells(["%load_ext nbgpumon", f"%gpumon record {runs[name]}", code,
                   "%gpumon record off"])  # fmt: skip
    comparison = nbgpumon.compare(runs["a"], runs["b"])
    page = comparison.report_html()
    assert "<svg" in page and "aligned by cell" in page
    assert "http" not in page.replace("http://www.w3.org", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
    assert "&lt;b&gt;bold" in page and "<b>" not in page
    assert "<script" not in comparison._repr_html_()


def test_the_bqplot_report_aligns_both_runs_by_cell(two_runs):
    a, b, _ = two_runs
    comparison = nbgpumon.compare(a, b)
    report = comparison.report()
    figures = [w for w in report.children if type(w).__name__ == "Figure"]
    assert [f.title for f in figures] == ["host RSS, aligned by cell"]
    lines = [m for m in figures[0].marks if type(m).__name__ == "Lines" and m.labels]
    assert [m.labels[0] for m in lines] == ["A: host RSS", "B: host RSS"]
    # B keeps 300 MiB: the axis counts MiB, as the table does, in round steps past the peak
    y_axis = figures[0].axes[1]
    assert y_axis.label == "MiB"
    ticks = list(y_axis.tick_values)
    step = ticks[1]
    assert ticks == [step * k for k in range(len(ticks))] and step in (50, 100, 200)
    peak = max(float(np.nanmax(m.y)) for m in lines)
    assert ticks[-1] >= peak and y_axis.scale.max > peak * 1.05


def test_each_matched_cell_starts_at_the_same_aligned_time_in_both_runs(two_runs):
    from nbgpumon._views.comparison.timeline import _knots, _mapped

    a, b, _ = two_runs
    comparison = nbgpumon.compare(a, b)
    knots_a, knots_b, bands = _knots(comparison.changes)
    for change in comparison.changes:
        if change.pair.kind == "cell" and change.a and change.b:
            x_a = _mapped([change.pair.a.start], knots_a)[0]
            x_b = _mapped([change.pair.b.start], knots_b)[0]
            assert x_a == pytest.approx(x_b)
    starts = [band.x0 for band in bands]
    assert starts == sorted(starts)


def test_compare_without_a_second_run_needs_a_live_monitor(monkeypatch):
    monkeypatch.setattr(current, "_monitor", None)
    with pytest.raises(nbgpumon.UsageError, match="no live monitor to compare with"):
        nbgpumon.compare(DATA / "recorded-v3.sqlite")
    with pytest.raises(nbgpumon.UsageError, match="compare's a is a recording's path"):
        nbgpumon.compare(42, DATA / "recorded-v3.sqlite")
    with pytest.raises(nbgpumon.RecordingNotFound, match="no recording at"):
        nbgpumon.compare(DATA / "no-such.sqlite", DATA / "recorded-v3.sqlite")


# -- the verdict, on records made here --------------------------------------------------------
def _record(duration=1.0, status="ok", rss_kept=0, rss_peak=0) -> CellRecord:
    return CellRecord(
        index=0, kind="cell", execution_count=1, cell_id=None, label="x", start=0.0,
        duration=duration, status=status, error="", devices=(), rss_before=0,
        rss_after=rss_kept, rss_peak=max(rss_peak, rss_kept), rss_peak_exact=True,
    )  # fmt: skip


def _verdict(a: CellRecord, b: CellRecord) -> tuple[str, tuple[str, ...]]:
    (change,) = worded(compare_pairs([Pair(a, b, SAME_SOURCE)], Thresholds()))
    return change.verdict, change.reasons


def test_growth_is_a_regression_only_past_both_the_share_and_the_amount():
    # +50% but only 50 MiB: not flagged; +10% of 1 GiB is ~102 MiB: flagged only past both
    assert _verdict(_record(rss_peak=100 * MIB), _record(rss_peak=150 * MIB)) == ("", ())
    assert _verdict(_record(rss_peak=1024 * MIB), _record(rss_peak=1100 * MIB))[0] == ""
    verdict, reasons = _verdict(_record(rss_peak=1024 * MIB), _record(rss_peak=1280 * MIB))
    assert verdict == "regression" and reasons == ("host peak +25% (+256 MiB)",)
    assert _verdict(_record(rss_peak=1280 * MIB), _record(rss_peak=1024 * MIB)) == (
        "improved", ("host peak \u221220% (\u2212256 MiB)",),
    )  # fmt: skip


def test_slower_past_a_quarter_and_a_second_and_failing_are_regressions():
    assert _verdict(_record(duration=2.0), _record(duration=2.4))[0] == ""  # +0.4 s
    assert _verdict(_record(duration=10.0), _record(duration=16.0)) == (
        "regression", ("slower +60% (+6.0 s)",),
    )  # fmt: skip
    assert _verdict(_record(), _record(status="error")) == (
        "regression", ("failed (error; was ok)",),
    )  # fmt: skip
    assert _verdict(_record(status="oom"), _record())[0] == "improved"


def test_the_command_line_prints_the_table_writes_the_page_and_checks(two_runs, tmp_path):
    a, b, _ = two_runs
    page = tmp_path / "compare.html"
    command = [sys.executable, "-m", "nbgpumon", "compare", str(a), str(b)]
    checked = subprocess.run([*command, "-o", str(page), "--check"], capture_output=True,
                             text=True, check=False)  # fmt: skip
    assert checked.returncode == 3, checked.stderr  # a cell regressed
    assert re.search(THREE_TIMES_KEPT, checked.stdout) and f"wrote {page}" in checked.stdout
    assert "<svg" in page.read_text()
    same = subprocess.run([*command[:-1], str(a), "--check"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert same.returncode == 0, same.stderr
    missing = subprocess.run([*command[:-1], str(tmp_path / "none.sqlite")],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0
    assert "no recording at" in missing.stderr
