"""An NVML metric is one row: docs/architecture.md's "Add a metric" recipe, followed in a copy
of the package (a fan-speed row in ``metrics.py`` and its reader in ``reads.py``, nothing
else), puts the metric in the timeline, ``unavailable()`` where the driver answers
NotSupported, the widget's payload, the recording and the exporter's text. And the tables NVML's
source reads by are the rows' (``rows.layout``).

The copy runs in a kernel of its own: this process's registry stays the built-ins'
(tests/test_registry.py compares it with the front end's fixture)."""

from __future__ import annotations

import base64
import math
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon._foundation.metrics import SERIES, Metric, metric_of
from nbgpumon._sources.base import DETAIL, FAST, SLOW
from nbgpumon._sources.devices.nvml import NvmlSource
from nbgpumon._sources.devices.nvml.metrics import ROWS
from nbgpumon._sources.devices.nvml.reads import power, sm_clock
from nbgpumon._sources.devices.nvml.rows import NvmlMetric, layout

from notebook_runner import fake_nvml_env, fake_pynvml, run_cells
from packed_history import unpack_history
from prometheus_server import samples

GIB = 2**30
PACKAGE = Path(nbgpumon.__file__).resolve().parent
# gpu1's fan answers NotSupported (the fake's per-device "not_supported")
TWO_GPUS = [
    {"name": "Fake H200", "uuid": "GPU-aaaa", "used": 3 * GIB, "total": 141 * GIB, "fan_speed": 30},
    {
        "name": "Fake H200", "uuid": "GPU-bbbb", "used": 5 * GIB, "total": 141 * GIB,
        "not_supported": ["nvmlDeviceGetFanSpeed"],
    },
]  # fmt: skip
# The recipe's two steps, as docs/architecture.md gives them.
READER = '''

def fan_speed(ask: BoundQuery) -> float | None:
    """The GPU's fan speed, percent of its maximum."""
    return ask("nvmlDeviceGetFanSpeed")
'''
ROW = """    NvmlMetric(
        _metric("fan_speed", "percent", "fan", "fan", SERIES, "gpu_fan_speed_ratio", "#14b8a6"),
        DETAIL,
        "fan_speed",
        reads.fan_speed,
    ),
"""
WAIT_FOR_THE_FAN = (
    "import time as _t, nbgpumon as _n\n_m = _n.monitor()\n"
    "def _fan(): return _m.timeline.latest().get('gpu0.nvml.fan_speed')\n"
    "_d = _t.monotonic() + 30\n"
    "while _fan() != 30 and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "_w = _m._session.sampler.ticks + 3  # a few rows that carry it, for the recording\n"
    "while _m._session.sampler.ticks < _w and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "print('FAN', _fan())"
)
SHOWN_CELL = (
    "import base64, json, math\n"
    "from nbgpumon._api.exporter_families import SessionCollector\n"
    "_row = _m.timeline.latest()\n"
    "_w = _m.widget()\n"
    "print('SHOWN=' + json.dumps({\n"
    "    'columns': list(_m.timeline.columns),\n"
    "    'latest': {c: (None if math.isnan(v) else v) for c, v in _row.items()\n"
    "               if c.startswith('gpu')},\n"
    "    'unavailable': [list(d.unavailable) for d in _m.data.devices],\n"
    "    'widget_columns': _w.columns, 'widget_devices': _w.devices,\n"
    "    'history': base64.b64encode(_w.history).decode(),\n"
    "    'exported': SessionCollector(_m.data).text(),\n"
    "}))"
)


def _copy_with_a_fan_row(root: Path) -> Path:
    """nbgpumon copied under ``root``, with the recipe followed: the reader, then the row (put
    first: every other metric's place in a device's values moves by one)."""
    copy = root / "nbgpumon"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    nvml = copy / "_sources" / "devices" / "nvml"
    reads = nvml / "reads.py"
    reads.write_text(reads.read_text() + READER)
    metrics = nvml / "metrics.py"
    text = metrics.read_text()
    assert text.count("ROWS = (\n") == 1
    metrics.write_text(text.replace("ROWS = (\n", "ROWS = (\n" + ROW))
    return root


@pytest.fixture(scope="module")
def fan_run(tmp_path_factory):
    root = _copy_with_a_fan_row(tmp_path_factory.mktemp("with_fan"))
    path = tmp_path_factory.mktemp("recording") / "fan.sqlite"
    env = fake_nvml_env(devices=TWO_GPUS)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env["PYTHONPATH"]])
    runs = run_cells(
        [
            "import nbgpumon\nprint('FROM', nbgpumon.__file__)",
            "%load_ext nbgpumon",
            f"%gpumon record {path}",
            WAIT_FOR_THE_FAN,
            SHOWN_CELL,
            "%gpumon snapshot",
            "%gpumon record off",
        ],
        env=env,
    )
    for run in runs:
        assert run.error is None, run.text
    assert runs[0].stdout.split() == ["FROM", str(root / "nbgpumon" / "__init__.py")]
    assert runs[3].stdout.split() == ["FAN", "30.0"], runs[3].text
    return {**runs[4].json_after("SHOWN="), "snapshot": runs[5].text}, path


def test_this_process_knows_no_fan_row():
    assert metric_of("gpu0.nvml.fan_speed") is None
    assert "fan_speed" not in [row.name for row in ROWS]


def test_the_timeline_has_its_columns_and_the_value_read_with_every_other_metric_in_place(
    fan_run,
):
    shown, _ = fan_run
    nvml = [c for c in shown["columns"] if c.startswith("gpu0.nvml.")]
    assert nvml[:2] == ["gpu0.nvml.fan_speed", "gpu0.nvml.mem_used"]  # the row's place
    assert "gpu1.nvml.fan_speed" in shown["columns"]
    latest = shown["latest"]
    assert latest["gpu0.nvml.fan_speed"] == 30
    assert latest["gpu1.nvml.fan_speed"] is None  # NotSupported there
    # the fast reads' places are the rows', not fixed numbers
    assert latest["gpu0.nvml.mem_used"] == 3 * GIB and latest["gpu1.nvml.mem_used"] == 5 * GIB
    assert latest["gpu0.nvml.mem_total"] == 141 * GIB and latest["gpu0.nvml.gpu_util"] == 42
    assert latest["gpu0.nvml.power"] == 250.0 and latest["gpu0.nvml.power_limit"] == 700.0


def test_the_snapshot_lists_it_under_its_panel(fan_run):
    shown, _ = fan_run
    assert "  fan: fan 30%" in shown["snapshot"], shown["snapshot"]


def test_unavailable_names_it_where_nvml_answers_not_supported(fan_run):
    shown, _ = fan_run
    assert shown["unavailable"] == [[], ["fan_speed"]]


def test_the_widget_sends_its_columns_values_and_where_it_is_unavailable(fan_run):
    shown, _ = fan_run
    columns = shown["widget_columns"]
    names = [c["name"] for c in columns]
    assert names == shown["columns"]
    fan = columns[names.index("gpu0.nvml.fan_speed")]
    assert (fan["panel"], fan["unit"], fan["label"], fan["chart"], fan["color"]) == (
        "fan", "percent", "fan", SERIES, "#14b8a6",
    )  # fmt: skip
    assert [d.get("unavailable", []) for d in shown["widget_devices"]] == [[], ["fan_speed"]]
    history = unpack_history(base64.b64decode(shown["history"]))
    on_gpu0 = history.mean[:, names.index("gpu0.nvml.fan_speed")]
    assert 30 in on_gpu0.tolist()
    assert all(math.isnan(v) for v in history.mean[:, names.index("gpu1.nvml.fan_speed")])


def test_the_recording_keeps_its_samples_and_its_metrics_row(fan_run):
    _, path = fan_run
    with sqlite3.connect(path) as db:
        by_device: dict[str, list] = {}
        for device, fan in db.execute("SELECT device, nvml_fan_speed FROM samples"):
            by_device.setdefault(device, []).append(fan)
        row = db.execute(
            "SELECT source, metric, unit, panel, label FROM metrics WHERE name = ?",
            ("nvml_fan_speed",),
        ).fetchone()
    assert 30 in by_device["gpu0"]
    assert by_device["gpu1"] and set(by_device["gpu1"]) == {None}
    assert row == ("nvml", "fan_speed", "percent", "fan", "fan")
    # read back here, where no fan row is registered: its figures are in the file
    loaded = nbgpumon.load(path)
    assert "gpu0.nvml.fan_speed" in loaded.columns
    assert loaded.latest()["gpu0.nvml.fan_speed"] == 30


def test_the_exporter_serves_it_as_a_ratio_on_the_gpu_that_has_it(fan_run):
    shown, _ = fan_run
    found = {
        labels["gpu"]: v for labels, v in samples(shown["exported"], "nbgpumon_gpu_fan_speed_ratio")
    }
    assert found == {"0": pytest.approx(0.3)}


# -- the tables the source reads by are the rows' ------------------------------------------
def _row(name: str, cadence: str, read: str, reader=None, **kwargs) -> NvmlMetric:
    return NvmlMetric(Metric("nvml", name, "percent", "p", name), cadence, read, reader, **kwargs)


BOUND = frozenset({"used"})


def test_rows_sharing_a_read_are_one_read_whose_values_go_to_each_row_s_place():
    found = layout(
        [
            _row("used", FAST, "memory"),
            _row("a", DETAIL, "shared", power),
            _row("b", SLOW, "alone", sm_clock),
            _row("c", DETAIL, "shared", power, unavailable_with=("shared", "memory")),
        ],
        BOUND,
    )
    assert found.names == ("used", "a", "b", "c") and found.at["c"] == 3
    assert [(r.read, r.reader, r.slots) for r in found.detail] == [("shared", power, (1, 3))]
    assert [(r.read, r.slots) for r in found.slow] == [("alone", (2,))]
    assert found.off_with == {"memory": ("used", "c"), "shared": ("a", "c"), "alone": ("b",)}


@pytest.mark.parametrize(
    "rows, refused",
    [
        ([_row("used", FAST, "memory"), _row("t", DETAIL, "t")], "give it a reader"),
        ([_row("used", FAST, "memory"), _row("t", FAST, "t", power)], "give another DETAIL"),
        ([_row("used", FAST, "memory"), _row("t", "hourly", "t", power)], "no cadence"),
        (
            [
                _row("used", FAST, "memory"),
                _row("a", DETAIL, "x", power),
                _row("b", DETAIL, "x", sm_clock),
            ],
            "share one reader",
        ),
    ],
)
def test_a_row_the_source_could_not_read_is_refused_at_import(rows, refused):
    with pytest.raises(ValueError, match=refused):
        layout(rows, BOUND)


def test_the_two_pcie_rows_are_one_nvml_call_each_detail_tick():
    fake = fake_pynvml(devices=[{"name": "Fake H200"}])
    source = NvmlSource(fake)
    assert source.open()
    try:
        for _ in range(3):
            source.read(frozenset({FAST, DETAIL}))
            time.sleep(0.002)  # the counters' timestamps move on: a rate
        assert fake.binding_calls["nvmlDeviceGetFieldValues"] == 3
        values = dict(zip(source.columns(), source.read(frozenset({FAST})), strict=True))
        assert values["gpu0.nvml.pcie_tx"] == pytest.approx(1_000_000, rel=0.25)
        assert values["gpu0.nvml.pcie_rx"] == pytest.approx(2_000_000, rel=0.25)
    finally:
        source.close()
