"""The metric registry is where the timeline's columns come from: every column has an entry,
every source fills exactly its columns, and nothing is declared twice."""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon import Monitor
from nbgpumon._foundation.metrics import metric, metric_of, metrics_of, registry
from nbgpumon._views.status.snapshot import snapshot_view

from notebook_runner import fake_pynvml
from packed_history import assert_history_holds

TWO_GPUS = [
    {"name": "Fake H200", "used": 3 * 2**30, "total": 141 * 2**30},
    {"name": "Fake H200", "used": 5 * 2**30, "total": 141 * 2**30},
]


@pytest.fixture
def monitor():
    mon = Monitor(nvml_module=fake_pynvml(devices=TWO_GPUS))
    try:
        yield mon
    finally:
        mon.close()


def test_every_metric_is_declared_once_with_its_unit_panel_and_label():
    columns = [m.column(0) for m in registry()]  # gpu0.jax.allocated and gpu0.torch.allocated
    assert len(columns) == len(set(columns))
    # a panel's lines tell themselves apart (a remote node's panels are its own)
    legends = [(m.scope == "node", m.panel, m.label) for m in registry()]
    assert len(legends) == len(set(legends))
    for m in registry():
        assert m.unit and m.panel and m.label and m.kind in ("gauge", "counter"), m
    assert metric("nvml", "mem_used").unit == "bytes"
    with pytest.raises(KeyError, match="no metric 'nope' of source 'nvml'"):
        metric("nvml", "nope")


def test_the_timeline_columns_are_the_registry_s_for_each_device(monitor):
    columns = list(monitor.timeline.columns)
    expected = []
    for source in [s.name for s in monitor._session.sampler.sources]:  # nvml, torch, host, ...
        found = metrics_of(source)
        expected += [m.column(d) for d in (0, 1) for m in found if m.scope == "gpu"]
        expected += [m.column() for m in found if m.scope == "host"]
    assert columns == expected
    assert {"gpu1.nvml.mem_used", "gpu1.torch.allocated", "host.rss"} <= set(columns)
    assert all(metric_of(c) is not None for c in columns)
    assert [metric_of(c).source for c in columns].count("host") == len(metrics_of("host"))


def test_a_tick_fills_each_source_s_columns(monitor):
    monitor.stop()
    monitor._session.sampler.tick()
    assert monitor._session.sampler.error == ""
    row = monitor.timeline.latest()
    for device, used in ((0, 3 * 2**30), (1, 5 * 2**30)):
        assert row[metric("nvml", "mem_used").column(device)] == used
        assert math.isnan(row[metric("torch", "allocated").column(device)])  # no CUDA here
    assert row[metric("host", "rss").column()] > 2**20


def test_the_widget_sends_each_column_with_its_metadata(monitor):
    widget = monitor.widget()
    sent = widget.columns
    assert [c["name"] for c in sent] == list(monitor.timeline.columns)
    used = next(c for c in sent if c["name"] == "gpu1.nvml.mem_used")
    assert used["device"] == 1 and used["unit"] == "bytes" and used["panel"] == "memory"
    assert used["label"] == "used (NVML)" and used["chart"] == "series"
    total = next(c for c in sent if c["name"] == "gpu0.nvml.mem_total")
    assert total["chart"] == "limit"
    rss = next(c for c in sent if c["name"] == "host.rss")
    assert rss["device"] is None and rss["panel"] == "rss"


def test_the_front_end_s_test_fixture_agrees_with_the_registry():
    # js/test/registry.json gives the vitest fixtures the metadata the kernel sends, for the
    # metrics they use: each entry must be the registry's, in the registry's order (a metric
    # added to the registry needs no change there).
    path = Path(__file__).resolve().parents[1] / "js" / "test" / "registry.json"
    fixture = json.loads(path.read_text())
    ours = {(m.source, m.name): (i, dataclasses.asdict(m)) for i, m in enumerate(registry())}
    for entry in fixture:
        _, expected = ours[(entry["source"], entry["name"])]
        assert {k: v for k, v in entry.items() if k != "order"} == expected
    positions = [ours[(e["source"], e["name"])][0] for e in fixture]
    assert positions == sorted(positions)
    assert [e["order"] for e in fixture] == sorted(e["order"] for e in fixture)


def test_a_recording_opens_in_the_live_chart():
    session = nbgpumon.load(Path(__file__).parent / "data" / "recorded-v1-h200.sqlite")
    widget = session.widget()
    assert [c["name"] for c in widget.columns] == session.columns
    assert widget.devices == [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "memory_total": 150754820096,
            "cuda_index": 0,
            "cuda_label": "cuda:0",
        }
    ]
    rows, width = struct.unpack_from("<II", widget.history)
    assert (rows, width) == (308, len(session.columns))  # every sample, in the snapshot
    assert_history_holds(widget.history, session.window())  # with its numbers
    assert [c["name"] for c in widget.cells] == [r.name for r in session.records]
    assert [m["label"] for m in widget.marks] == ["training done"]
    assert widget.running == {}
    assert widget.status.startswith("recorded: ") and "308 samples" in widget.status


def test_the_snapshot_lists_every_metric_with_a_value_under_its_panel(monitor):
    monitor.stop()
    monitor._session.sampler.tick()
    text = snapshot_view(monitor.data).text
    assert "  memory: used (NVML) 3.0 GiB · " in text and "total 141 GiB" in text
    assert "  util: GPU 42% · memory " in text
    assert "  system: system used " in text  # a host metric, under the host's panels
