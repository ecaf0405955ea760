"""A GPU that ``CUDA_VISIBLE_DEVICES`` hides, in a real kernel with two GPUs faked at NVML's
boundary: every view names each GPU by its physical identity (NVML's index and name) plus the
kernel's ``cuda:N``, and the hidden one as "not visible to this kernel"; its NVML figures stay.
"""

from __future__ import annotations

import re

import pytest

from notebook_runner import DEVICES_CELL, fake_nvml_env, run_cells

GIB = 2**30
UUID_0 = "GPU-0a0a0a0a-1111-2222-3333-444444444444"
UUID_1 = "GPU-1b1b1b1b-5555-6666-7777-888888888888"
MACHINE = {
    "devices": [
        {"name": "Fake A", "uuid": UUID_0, "used": 3 * GIB, "total": 80 * GIB,
         "processes": [{"pid": 4242, "used": 2 * GIB}]},
        {"name": "Fake B", "uuid": UUID_1, "used": 5 * GIB, "total": 80 * GIB,
         "processes": [{"pid": "self", "used": GIB}]},
    ]
}  # fmt: skip
WAIT_FOR_PROCESSES = (  # a condition with a deadline: the slow cadence read the process list
    "import time, nbgpumon\n_d = time.monotonic() + 30\n"
    "while not nbgpumon.monitor()._session.process_source.processes and time.monotonic() < _d:\n"
    "    time.sleep(0.02)\n"
    "print('PROCESSES', bool(nbgpumon.monitor()._session.process_source.processes))"
)
HIDDEN_0 = "gpu0 Fake A (not visible to this kernel)"
HIDDEN_1 = "gpu1 Fake B (not visible to this kernel)"


def _run(visible: str) -> dict:
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            DEVICES_CELL,
            WAIT_FOR_PROCESSES,
            "%gpumon status",
            "%gpumon snapshot",
            "%gpumon",
            "x = 1",
            "%gpumon cells",
        ],
        env={**fake_nvml_env(**MACHINE), "CUDA_VISIBLE_DEVICES": visible},
    )
    assert runs[2].stdout.split() == ["PROCESSES", "True"], runs[2].text
    return {
        "load": runs[0].text,
        "devices": runs[1].json_after("DEVICES="),
        "status": runs[3].text,
        "snapshot": runs[4].text,
        "chart": runs[5].text,  # the widget's text: what a terminal shows
        "cells": runs[7].text,
    }


@pytest.fixture(scope="module")
def only_gpu1() -> dict[str, str]:
    return _run("1")


@pytest.mark.parametrize("visible", ["1", UUID_1, "GPU-1b1b"])
def test_cuda0_is_nvml_gpu1_by_index_by_uuid_and_by_a_unique_uuid_prefix(visible, only_gpu1):
    seen = only_gpu1 if visible == "1" else _run(visible)
    assert seen["devices"] == [
        [0, None, HIDDEN_0],
        [1, 0, "gpu1 Fake B (cuda:0)"],
    ]
    assert "(gpu0 not visible to this kernel)" in seen["load"]
    assert f"gpu0: Fake A, {UUID_0}, not visible to this kernel, 80.0 GiB" in seen["status"]
    assert f"gpu1: Fake B, {UUID_1}, cuda:0, 80.0 GiB" in seen["status"]


def test_the_snapshot_keeps_the_hidden_gpus_nvml_figures_under_its_physical_name(only_gpu1):
    snapshot = only_gpu1["snapshot"]
    hidden = snapshot.index(f"{HIDDEN_0}:")
    seen = snapshot.index("gpu1 Fake B (cuda:0):")
    assert hidden < seen  # NVML's order: PCI bus order, not CUDA's
    assert "used (NVML) 3.0 GiB" in snapshot[hidden:seen]  # the device's view is still true
    assert "used (NVML) 5.0 GiB" in snapshot[seen:]


def test_the_charts_text_names_both_gpus_and_its_status_line_the_hidden_one(only_gpu1):
    chart = only_gpu1["chart"]
    assert f"{HIDDEN_0}: 3.0 GiB used of 80.0 GiB" in chart
    assert "gpu1 Fake B (cuda:0): 5.0 GiB used of 80.0 GiB" in chart
    assert "· gpu0 not visible to this kernel ·" in chart.splitlines()[0]


def test_each_process_is_listed_on_the_physical_gpu_it_runs_on(only_gpu1):
    snapshot = only_gpu1["snapshot"]
    assert "gpu0: PID 4242" in snapshot
    assert re.search(r"gpu1: PID \d+ this kernel: 1\.0 GiB", snapshot), snapshot
    assert not re.search(r"gpu0: PID \d+ this kernel", snapshot), snapshot


def test_with_1_0_nvml_gpu1_is_cuda0_and_gpu0_is_cuda1():
    seen = _run("1,0")
    assert seen["devices"] == [
        [0, 1, "gpu0 Fake A (cuda:1)"],
        [1, 0, "gpu1 Fake B (cuda:0)"],
    ]
    assert "not visible to this kernel" not in seen["load"] + seen["status"] + seen["snapshot"]
    assert f"gpu0: Fake A, {UUID_0}, cuda:1, 80.0 GiB" in seen["status"]
    assert "gpu0 Fake A (cuda:1):" in seen["snapshot"]


def test_an_empty_cuda_visible_devices_hides_every_gpu_and_nothing_breaks():
    seen = _run("")
    assert seen["devices"] == [[0, None, HIDDEN_0], [1, None, HIDDEN_1]]
    assert "(gpu0, gpu1 not visible to this kernel)" in seen["load"]
    assert "Fake A, " + UUID_0 + ", not visible to this kernel" in seen["status"]
    assert f"{HIDDEN_0}:" in seen["snapshot"] and f"{HIDDEN_1}:" in seen["snapshot"]
    assert "used (NVML) 5.0 GiB" in seen["snapshot"]  # NVML still reads both
    assert re.search(r"^\[\d+\] ", seen["cells"], re.MULTILINE), seen["cells"]  # the ledger works
    assert "Error" not in "".join(v for v in seen.values() if isinstance(v, str))
