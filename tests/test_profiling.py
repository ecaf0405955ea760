"""Profiling one cell under torch's profiler, in a real kernel on CPU
(``_session/controls/profile_run.py``, drawn by ``_views/report/profile.py``)."""

from __future__ import annotations

import pytest

from nbgpumon._views.report.profile import ProfileResult

from notebook_runner import run_cells

pytest.importorskip("torch")
MIB64 = 4096 * 4096 * 4  # one float32 4096 x 4096 tensor

PROFILE = (
    "import json\n"
    "from nbgpumon._session.controls.profile_run import profile_cell\n"
    "r = profile_cell(get_ipython(), 'import torch\\nx = torch.ones(4096, 4096)\\ny = x @ x')\n"
    "print(r.sort_by)\n"
    "print(r.rows[0]['name'])\n"
    "print('RESULT=' + json.dumps({'rows': r.rows, 'note': r.note, 'table': r.table}))"
)
AFTER = (
    "print('AFTER=' + json.dumps({'x': list(x.shape), 'y00': float(y[0, 0]),"
    " 'cuda': torch.cuda.is_initialized()}))"
)
FAILING = (
    "failed = profile_cell(get_ipython(), 'w = torch.zeros(1000)\\nraise ValueError(\"boom\")')\n"
    "print('FAILED=' + json.dumps({'rows': failed.rows, 'note': failed.note}))"
)
# after two profiles, one ending in an error that IPython keeps (sys.last_traceback)
LEFT = (
    "import gc, sys\n"
    "from torch.autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg\n"
    "from torch.autograd.profiler import profile as _AutogradProfile\n"
    "from torch.profiler import profile as _Profile\n"
    "gc.collect()\n"
    "kinds = (EventList, FunctionEvent, FunctionEventAvg, _Profile, _AutogradProfile)\n"
    "left = sum(type(o) in kinds for o in gc.get_objects())\n"
    "print('LEFT=' + json.dumps([left, sys.last_traceback is not None]))"
)


# what made a trivial cell's profile take seconds: torch.profiler.profile's look at inductor
INDUCTOR = "import sys\nprint('INDUCTOR', 'torch._inductor' in sys.modules)"


@pytest.fixture(scope="module")
def runs():
    return run_cells([PROFILE, AFTER, FAILING, LEFT, INDUCTOR], timeout=180)


def test_without_cuda_the_operators_are_sorted_by_the_cpu_memory_they_allocated(runs):
    lines = runs[0].stdout.splitlines()
    assert lines[0] == "self_cpu_memory_usage"
    result = runs[0].json_after("RESULT=")
    rows = {r["name"]: r for r in result["rows"]}
    # the two allocations: aten::ones -> aten::empty makes x, aten::matmul -> aten::mm makes y;
    # equal bytes, so the stable sort keeps event order and aten::empty comes first
    assert lines[1] == "aten::empty"
    assert [r["name"] for r in result["rows"][:2]] == ["aten::empty", "aten::mm"]
    assert rows["aten::empty"]["self_cpu_memory"] == MIB64
    assert rows["aten::mm"]["self_cpu_memory"] == MIB64
    # totals include children; "self" doesn't
    assert rows["aten::ones"]["cpu_memory"] == MIB64
    assert rows["aten::ones"]["self_cpu_memory"] == 0
    assert rows["aten::mm"]["self_cuda_memory"] == 0
    assert rows["aten::mm"]["self_cuda_time_us"] is None  # CUDA was not profiled
    assert "Self CPU Mem" in result["table"]
    assert "profiled CPU only" in result["note"]


def test_the_cell_runs_in_the_users_namespace_and_cuda_stays_uninitialised(runs):
    assert runs[1].error is None, runs[1].text
    assert runs[1].json_after("AFTER=") == {"x": [4096, 4096], "y00": 4096.0, "cuda": False}


def test_an_error_in_the_cell_is_shown_and_what_ran_before_it_is_profiled(runs):
    run = runs[2]
    assert run.error == "ValueError"  # shown by IPython, as for any cell
    failed = run.json_after("FAILED=")
    assert "the cell raised" in failed["note"]
    zeros = next(r for r in failed["rows"] if r["name"] == "aten::zeros")
    assert zeros["cpu_memory"] == 1000 * 4


def test_nothing_of_the_profiler_stays_alive_after_it_returns(runs):
    assert runs[3].json_after("LEFT=") == [0, True]


def test_the_profilers_start_and_stop_markers_stay_out_of_the_cells_output(runs):
    # torch's Kineto writes "USDT:… profiler_start" and "… profiler_stop" to fd 2, which the
    # kernel shows as the cell's stderr
    for run in (runs[0], runs[2]):
        assert "USDT" not in run.text and "profiler_st" not in run.text, run.text


def test_profiling_loads_no_compiler_the_cell_did_not_load(runs):
    assert runs[4].stdout == "INDUCTOR False\n"  # (importing it took 1.4 s of a 1.5 s profile)


def test_with_inductor_loaded_torchs_own_profile_gives_the_same_rows_as_quietly():
    # (torch.profiler.profile then: its look at inductor costs nothing, its CUDA-graph care)
    runs = run_cells(["import torch._inductor", PROFILE], timeout=180)
    assert runs[1].error is None, runs[1].text
    assert runs[1].stdout.splitlines()[:2] == ["self_cpu_memory_usage", "aten::empty"]
    rows = {r["name"]: r for r in runs[1].json_after("RESULT=")["rows"]}
    assert rows["aten::mm"]["self_cpu_memory"] == MIB64
    assert "USDT" not in runs[1].text, runs[1].text


def test_the_html_view_escapes_operator_names_and_the_note():
    result = ProfileResult(
        table="",
        rows=[
            {
                "name": "<script>alert(1)</script>",
                "calls": 1,
                "self_cuda_memory": 2**30,
                "cuda_memory": 2**30,
                "self_cpu_memory": 0,
                "cpu_memory": 0,
                "self_cuda_time_us": 12.0,
                "cuda_time_us": 12.0,
            }
        ],
        sort_by="self_cuda_memory_usage",
        note="<b>note</b> & more",
    )
    page = result._repr_html_()
    assert "<script>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;note&lt;/b&gt; &amp; more" in page
    assert "1.0 GiB" in page


def test_the_cell_magic_shows_the_table_and_the_ledger_records_the_cell_once():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%%gpumon profile 5\nimport torch\nx = torch.ones(1024, 1024)",
            "import json, nbgpumon\n"
            "print('CELLS=' + json.dumps([[r.execution_count, r.label, r.status] "
            "for r in nbgpumon.cells()]))",
        ],
        timeout=120,
    )
    assert runs[1].error is None, runs[1].text
    assert "aten::empty" in runs[1].text and "Self CPU Mem" in runs[1].text
    cells = runs[2].json_after("CELLS=")
    # one record: the code run inside is part of its cell, not a record of its own
    assert cells == [[2, "%%gpumon profile 5", "ok"]]
