"""The words for the processes a cell started (docs/children.md): one child, exact or a lower
bound, several, the ranks of a job, how each ended; the summary line, ``%gpumon cells``,
``cells_frame()`` and the widget's row carry them, and a cell without children reads as before."""

from __future__ import annotations

import dataclasses
import re

import pytest

from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._sources.processes.children import ChildGpu, ChildUsage
from nbgpumon._views.frames import cells_frame, frame_row
from nbgpumon._views.widget.live_chart import cell_row
from nbgpumon._views.widget.traits import CELL
from nbgpumon._views.words.cell_summary import summary_line
from nbgpumon._views.words.cells_table import cells_table
from nbgpumon._views.words.children import children_count_and_peak, children_text, job_lines

GIB, MIB = 2**30, 2**20


def _child(
    command: str = "python train.py",
    peak: int = 3 * GIB,
    *,
    exact: bool = False,
    util: float | None = 87.4,
    gpus: tuple[int, ...] = (0,),
    exit_code: int | None = 0,
    running: bool = False,
    pid: int = 4242,
    **rank: object,
) -> ChildUsage:
    return ChildUsage(
        pid=pid, command=command, started=100.0, ended=None if running else 106.0,
        exit_code=None if running else exit_code, parent=4000, depth=2,
        gpus=tuple(ChildGpu(i, peak // len(gpus), exact, 0.25, util, 5) for i in gpus),
        **rank,
    )  # fmt: skip


def _record(*children: ChildUsage, status: str = "ok") -> CellRecord:
    device = DeviceUsage(
        index=0, cuda_index=0, name="Fake GPU", allocated_before=0, allocated_after=0,
        reserved_before=0, reserved_after=0, device_used_before=GIB, device_used_after=GIB,
        peak_allocated=MIB, peak_exact=True, allocated_total=0, util_mean=0.0, util_max=0.0,
    )  # fmt: skip
    return CellRecord(
        index=4, kind="cell", execution_count=5, cell_id=None, label="!python train.py",
        start=100.0, duration=6.3, status=status, error="", devices=(device,),
        rss_before=100 * MIB, rss_after=100 * MIB + 3 * MIB // 2, rss_peak=None,
        rss_peak_exact=False, children=children,
    )  # fmt: skip


# -- the words ----------------------------------------------------------------------------
def test_one_child_sampled_is_a_lower_bound_on_its_gpu_with_its_utilization():
    assert children_text([_child()]) == "python train.py ≥3.0 GiB on gpu0, 87%"


def test_the_driver_s_accounting_makes_the_peak_exact_and_no_utilization_says_none():
    assert children_text([_child(exact=True, util=None)]) == "python train.py 3.0 GiB on gpu0"


def test_the_gpus_are_named_by_the_key_given_and_joined_when_several():
    child = _child(gpus=(0, 1), peak=4 * GIB)
    assert children_text([child]) == "python train.py ≥4.0 GiB on gpu0+gpu1, 87%"
    named = children_text([child], devices_key=lambda i: f"gpu{i} (cuda:{1 - i})")
    assert named == "python train.py ≥4.0 GiB on gpu0 (cuda:1)+gpu1 (cuda:0), 87%"


@pytest.mark.parametrize(
    ("ending", "words"),
    [
        ({"exit_code": 0}, ""),
        ({"exit_code": None}, ""),  # not seen: nothing claimed
        ({"exit_code": 1}, ", exit 1"),
        ({"exit_code": -9}, ", killed by SIGKILL"),
        ({"exit_code": -15}, ", killed by SIGTERM"),
        ({"running": True}, ", running"),
    ],
)
def test_how_a_child_ended_follows_its_figures(ending, words):
    assert children_text([_child(**ending)]) == f"python train.py ≥3.0 GiB on gpu0, 87%{words}"


def test_several_children_biggest_first_and_past_three_counted():
    small, big = _child("bash prep.sh", GIB, util=None), _child("python eval.py", 5 * GIB)
    assert children_text([small, big]) == (
        "python eval.py ≥5.0 GiB on gpu0, 87%; bash prep.sh ≥1.0 GiB on gpu0"
    )
    many = [_child(f"python w{i}.py", (i + 1) * GIB, util=None) for i in range(5)]
    assert children_text(many) == (
        "python w4.py ≥5.0 GiB on gpu0; python w3.py ≥4.0 GiB on gpu0; "
        "python w2.py ≥3.0 GiB on gpu0; and 2 more"
    )


def test_the_ranks_of_one_job_are_one_entry_named_by_their_launcher():
    launcher = "torchrun --nproc_per_node=2 train.py"
    ranks = [
        _child("python train.py", GIB, util=81.0, pid=123, rank=0, job="j1", launcher=launcher),
        _child("python train.py", GIB, util=79.0, pid=124, rank=1, job="j1", launcher=launcher),
    ]
    line = children_text(ranks)
    assert line == "job torchrun --nproc_per_node=2 train.py: 2 ranks ≥2.0 GiB on gpu0, 80%"
    # with no launcher seen, the first rank's command; and a lone child beside it stays apart
    bare = [dataclasses.replace(r, launcher="") for r in reversed(ranks)]
    assert children_text([*bare, _child("python eval.py", 512 * MIB, util=None)]) == (
        "job python train.py: 2 ranks ≥2.0 GiB on gpu0, 80%; python eval.py ≥512 MiB on gpu0"
    )
    assert job_lines(ranks) == [
        line,
        "  rank 0 (PID 123) ≥1.0 GiB on gpu0, 81%",
        "  rank 1 (PID 124) ≥1.0 GiB on gpu0, 79%",
    ]
    assert job_lines([_child()]) == []


def test_a_job_whose_ranks_ended_differently_says_which_rank():
    ranks = [
        _child("python t.py", GIB, util=None, pid=1, rank=0, job="j", exit_code=0),
        _child("python t.py", GIB, util=None, pid=2, rank=1, job="j", exit_code=-9),
    ]
    assert (
        children_text(ranks)
        == "job python t.py: 2 ranks ≥2.0 GiB on gpu0, rank 1 killed by SIGKILL"
    )
    both = [dataclasses.replace(r, exit_code=1) for r in ranks]
    assert children_text(both) == "job python t.py: 2 ranks ≥2.0 GiB on gpu0, exit 1"


def test_no_children_no_words():
    assert children_text([]) == ""
    assert children_count_and_peak([]) == ""


# -- where they are shown -----------------------------------------------------------------
def test_the_summary_line_ends_with_the_children_before_the_status():
    assert summary_line(_record(_child())) == (
        "[5] 0 B alloc · peak 1.0 MiB · kept 0 B · host +1.5 MiB · 6.3 s · GPU 0% · "
        "children: python train.py ≥3.0 GiB on gpu0, 87%"
    )
    failed = summary_line(_record(_child(exit_code=1), status="error"))
    assert failed.endswith(" · children: python train.py ≥3.0 GiB on gpu0, 87%, exit 1 · error")


def test_a_cell_without_children_keeps_its_summary_line_and_table():
    line = summary_line(_record())
    assert line == "[5] 0 B alloc · peak 1.0 MiB · kept 0 B · host +1.5 MiB · 6.3 s · GPU 0%"
    table = cells_table([_record()])
    assert "children" not in table.text and "children" not in table.html


def test_the_cells_table_counts_the_children_and_sums_their_peaks():
    records = [_record(), dataclasses.replace(_record(_child(), _child(peak=GIB)), index=5)]
    text = cells_table(records).text
    header, newest, older = text.splitlines()
    assert re.search(r"\bchildren\b", header)
    column = header.index("children")
    assert newest[column:].startswith("2: ≥4.0 GiB"), text
    assert older[column : column + len("2: ≥4.0 GiB")].strip() == "", text  # none: blank
    exact = cells_table([_record(_child(exact=True))]).text
    assert re.search(r"  1: 3\.0 GiB  ", exact), exact


def test_the_cells_table_lists_each_rank_of_a_job_under_it():
    ranks = [
        _child("python train.py", GIB, util=None, pid=123 + r, rank=r, job="j", launcher="torchrun")
        for r in (0, 1)
    ]
    view = cells_table([_record(*ranks)])
    assert view.text.splitlines()[-3:] == [
        "[5] job torchrun: 2 ranks ≥2.0 GiB on gpu0",
        "  rank 0 (PID 123) ≥1.0 GiB on gpu0",
        "  rank 1 (PID 124) ≥1.0 GiB on gpu0",
    ]
    assert ">[5] job torchrun: 2 ranks" in view.html


def test_the_cells_frame_has_the_children_count_and_their_peak_in_bytes():
    row = frame_row(_record(_child(), _child(peak=GIB)))
    assert row["children"] == 2 and row["children_peak"] == 4 * GIB
    frame = cells_frame([_record(), _record(_child())])
    assert list(frame["children"]) == [0, 1]
    assert list(frame["children_peak"]) == [0, 3 * GIB]
    assert list(frame.columns[-2:]) == ["source_cut", "source"]  # the source stays last
    assert {"children", "children_peak"} <= set(cells_frame([]).columns)


def test_the_widget_s_row_carries_the_children_words_as_a_typed_field():
    row = cell_row(_record(_child()))
    assert row["children"] == "python train.py ≥3.0 GiB on gpu0, 87%"
    assert row["summary"].endswith("· children: " + row["children"])
    CELL.check(row, "row")
    assert cell_row(_record())["children"] == ""
    with pytest.raises(Exception, match="'children' must be a string"):
        CELL.check({**row, "children": 3}, "row")
