"""The widget's synced traits are typed (docs/widget-protocol.md): what a live session and a
recording send passes, and a malformed value is refused in Python with one line that says
where and what, before anything reaches the browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets import TraitError

import nbgpumon
from nbgpumon._api.monitor import Monitor

from notebook_runner import fake_pynvml


@pytest.fixture(scope="module")
def widget():
    gpu = {"name": "Fake H200", "used": 3 * 2**30, "total": 141 * 2**30}
    mon = Monitor(nvml_module=fake_pynvml(devices=[gpu]))
    try:
        mon.mark("warm-up done")
        yield mon.widget()
    finally:
        mon.close()


def test_what_a_live_session_sends_passes(widget):
    assert widget.columns and widget.devices and widget.marks[0]["label"] == "warm-up done"
    widget.columns = list(widget.columns)  # validated again: the same values pass
    widget.devices = list(widget.devices)


def test_a_recording_s_ledger_passes():
    session = nbgpumon.load(Path(__file__).parent / "data" / "recorded-v1-h200.sqlite")
    w = session.widget()
    assert len(w.cells) == len(session.records) and w.cells[0]["kind"] == "cell"
    w.cells = list(w.cells)


@pytest.mark.parametrize(
    ("trait", "value", "message"),
    [
        ("cells", [{"start": "soon"}], "GPUMonWidget.cells[0] has no 'index' (an integer)"),
        ("columns", [{"name": "gpu0.nvml.mem_used", "device": "0", "unit": "bytes", "panel": ""}],
         "GPUMonWidget.columns[0]: 'device' must be an integer or None, not '0'"),
        ("columns", ["gpu0.nvml.mem_used"],
         "GPUMonWidget.columns[0] must be a dict, not 'gpu0.nvml.mem_used'"),
        ("devices", [{"index": 0, "name": "H200", "memory_total": 1.5, "cuda_index": 0,
                      "cuda_label": "cuda:0"}],
         "GPUMonWidget.devices[0]: 'memory_total' must be an integer or None, not 1.5"),
        ("marks", [{"time": 1.0, "label": None}],
         "GPUMonWidget.marks[0]: 'label' must be a string, not None"),
        ("running", {"name": "[3]", "count": 3, "kind": "cell", "label": "", "start": 1.0,
                     "baseline": {"gpu0.nvml.mem_used": "1 GiB"}},
         "GPUMonWidget.running: 'baseline' must be a dict of numbers by column, not"),
        ("nodes", [{"host": "node-1", "last_seen": 1.0, "gpus": [{"gpu": "gpu0"}]}],
         "GPUMonWidget.nodes[0]: 'gpus' must be a list of {gpu, model, uuid, pod, ...}"),
    ],
)  # fmt: skip
def test_a_malformed_value_is_refused_in_python_with_one_line(widget, trait, value, message):
    before = getattr(widget, trait)
    with pytest.raises(TraitError) as refused:
        setattr(widget, trait, value)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)
    assert getattr(widget, trait) == before  # nothing changed, nothing sent


def test_a_cell_row_of_the_wrong_shape_never_joins_the_ledger(widget):
    row = {**_a_cell_row(), "peak_exact": "yes"}
    with pytest.raises(TraitError, match="'peak_exact' must be True or False, not 'yes'"):
        type(widget).cells.check_rows(widget, [row])


def test_running_is_empty_between_cells_or_a_whole_row(widget):
    widget.running = {}
    widget.running = {"name": "[3]", "count": 3, "kind": "cell", "label": "", "start": 1.0,
                      "baseline": {"gpu0.nvml.mem_used": 2**30, "host.rss": None}}  # fmt: skip
    with pytest.raises(TraitError, match=r"GPUMonWidget\.running has no 'start'"):
        widget.running = {"name": "[4]", "count": 4, "kind": "cell", "label": "", "baseline": {}}
    widget.running = {}


def _a_cell_row() -> dict:
    return {
        "index": 0, "name": "[1]", "count": 1, "kind": "cell", "label": "x = 1", "start": 1.0,
        "end": 2.0, "duration": 1.0, "status": "ok", "alloc": None, "peak": None,
        "peak_exact": False, "kept": None, "util_mean": None, "util_max": None,
        "host_delta": 0, "summary": "[1]", "held_by": "", "frameworks": [],
        "frameworks_named": False,
    }  # fmt: skip
