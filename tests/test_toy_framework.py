"""docs/recipes.md's "Add a framework" recipe is true: a toy plug-in in one file
(tests/toy_framework.py), with no other change to nbgpumon, is in ``%gpumon status`` and the
status line, in a cell's record with its own figures, in the chart's columns, in a recording
written and loaded back, and in the exporter's families.

Registering a plug-in is for the whole process, so the toy lives in a kernel of its own: this
process's registry stays the built-ins' (tests/test_registry.py compares it with the front
end's fixture)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon._sources.frameworks import frameworks

from notebook_runner import RECORDS_CELL, WAIT_FOR_ALLOCATOR_READS, fake_nvml_env, run_cells
from prometheus_server import samples

GIB = 2**30
TESTS = Path(__file__).resolve().parent
ONE_GPU = [{"name": "Fake H200", "uuid": "GPU-aaaa", "used": 3 * GIB, "total": 141 * GIB}]
TOY_CELL = "toy_framework.use(0, 2 * 2**30, 3 * 2**30)  # the toy's cell"

COLUMNS_CELL = (
    "import json, nbgpumon\n"
    "from nbgpumon._foundation.metrics import describe_columns\n"
    "m = nbgpumon.monitor()\n"
    "print('COLUMNS=' + json.dumps(describe_columns(m.data.columns)))\n"
    "from nbgpumon._views.status.session_status import status_line\n"
    "print('LINE=' + status_line(m.data.status()))"
)
EXPORT_CELL = (
    "from nbgpumon._api.exporter_families import SessionCollector\n"
    "print(SessionCollector(nbgpumon.monitor().data, hostname='node-1').text())"
)
LOADED_CELL = (
    "s = nbgpumon.load(PATH)\n"
    "toy = [c for c in describe_columns(s.columns) if c.get('source') == 'toy']\n"
    "print('LOADED=' + json.dumps(toy))"
)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "toy.sqlite"
    env = fake_nvml_env(devices=ONE_GPU)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env["PYTHONPATH"]])
    runs = run_cells(
        [
            "import toy_framework",  # before the load: the session reads the plug-ins then
            "%load_ext nbgpumon",
            f"PATH = {str(path)!r}\n%gpumon record {path}",
            TOY_CELL,
            WAIT_FOR_ALLOCATOR_READS,
            "%gpumon status",
            COLUMNS_CELL,
            EXPORT_CELL,
            RECORDS_CELL,
            "%gpumon record off",
            LOADED_CELL,
        ],
        env=env,
    )
    for run in runs:
        assert run.error is None, run.text
    return runs, path


def test_this_process_knows_only_the_built_ins():
    assert "toy" not in [f.name for f in frameworks()]


def test_status_lists_the_toy_with_its_figures_and_its_peak_note(toy_run):
    runs, _ = toy_run
    assert runs[4].stdout.strip() == "TICKS True"
    status = runs[5].text
    assert (
        "  Toy: active: cuda:0 2.0 GiB in use, 3.0 GiB reserved; "
        "per-cell peaks sampled (≥): the toy keeps none"
    ) in status, status
    line = next(ln for ln in runs[6].stdout.splitlines() if ln.startswith("LINE="))
    assert "Toy: active on cuda:0" in line, line


def test_a_cell_s_record_carries_the_toy_s_figures(toy_run):
    runs, _ = toy_run
    rows = {r["label"]: r for r in runs[8].json_after("RECORDS=")}
    row = rows[TOY_CELL]
    assert row["gpu0.toy.retained"] == 2 * GIB, row
    assert row["gpu0.toy.peak_exact"] is False  # the toy keeps no peak: sampled
    assert row["retained"] == 2 * GIB


def test_the_chart_s_columns_have_the_toy_s_lines(toy_run):
    runs, _ = toy_run
    toy = {c["name"]: c for c in runs[6].json_after("COLUMNS=") if c.get("source") == "toy"}
    assert set(toy) == {"gpu0.toy.reserved", "gpu0.toy.allocated"}
    allocated = toy["gpu0.toy.allocated"]
    assert (allocated["group"], allocated["panel"], allocated["label"], allocated["chart"]) == (
        "framework",
        "memory",
        "in use (Toy)",
        "series",
    )
    assert allocated["color"] == "#f43f5e"


def test_the_exporter_serves_the_toy_s_allocator(toy_run):
    runs, _ = toy_run
    text = runs[7].stdout
    found = [
        (labels, v)
        for labels, v in samples(text, "nbgpumon_allocator_allocated_bytes")
        if labels.get("framework") == "toy"
    ]
    assert found and found[0][1] == 2 * GIB, text
    assert found[0][0]["gpu"] == "0" and found[0][0]["Hostname"] == "node-1"


def test_the_recording_keeps_the_toy_s_columns_and_figures(toy_run):
    runs, path = toy_run
    loaded = runs[10].json_after("LOADED=")
    assert {c["name"] for c in loaded} == {"gpu0.toy.reserved", "gpu0.toy.allocated"}
    # read back here, where no toy is registered: its figures are in the file
    session = nbgpumon.load(path)
    assert {"gpu0.toy.reserved", "gpu0.toy.allocated"} <= set(session.columns)
    (record,) = [r for r in session.records if r.label == TOY_CELL]
    (toy,) = [f for f in record.devices[0].frameworks if f.framework == "toy"]
    assert toy.allocated_after == 2 * GIB and toy.reserved_after == 3 * GIB
    assert session.latest()["gpu0.toy.allocated"] == 2 * GIB  # its samples too
