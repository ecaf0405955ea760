"""MIG, faked at NVML's boundary (the H200 we test on cannot be switched to MIG): an H200 in
MIG mode with two GPU instances of their own memory, and a kernel given one of them by
``CUDA_VISIBLE_DEVICES=MIG-<uuid>``. The loaded line, ``%gpumon status``, the ledger, the
exporter and the widget's devices show that MIG device, its memory as NVML reports it on its
handle (not the GPU's, not the other instance's), its utilization as unavailable (NVML answers
NotSupported on a MIG device), and its GPU named once. A MIG UUID that is not there is one
line, and the sampler keeps running. A GPU that could do MIG but has it off reads as before.
"""

from __future__ import annotations

import re

import pytest

import nbgpumon
from nbgpumon._api.exporter_families import SessionCollector
from nbgpumon._api.monitor import Monitor
from nbgpumon._session.facts.session_data import MigInstance
from nbgpumon._sources.cluster_series import reading_from
from nbgpumon._sources.devices.nvml.source import NvmlSource
from nbgpumon._sources.prometheus_http import Series

from notebook_runner import RECORDS_CELL, cells_by_label, fake_nvml_env, fake_pynvml, run_cells
from prometheus_server import free_port, samples

GIB = 2**30
GPU_UUID = "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
MIG_1 = "MIG-11111111-2222-5333-8444-555555555555"  # GPU instance 1: 1g.18gb
MIG_2 = "MIG-66666666-7777-5888-9999-000000000000"  # GPU instance 2: 3g.71gb
H200 = {
    "name": "NVIDIA H200", "uuid": GPU_UUID, "total": 150754820096, "used": 9 * GIB,
    "power_mw": 310_000,
    "mig": [
        {"uuid": MIG_1, "gpu_instance": 1, "compute_instance": 0, "profile": "1g.18gb",
         "total": 17716740096, "used": 4 * GIB, "reserved": 0,
         "processes": [{"pid": "self", "used": 3 * GIB}]},
        {"uuid": MIG_2, "gpu_instance": 2, "compute_instance": 0, "profile": "3g.71gb",
         "total": 76235669504, "used": 5 * GIB, "processes": [{"pid": 4242, "used": 5 * GIB}]},
    ],
}  # fmt: skip
MACHINE = {"devices": [H200]}
LABEL = "gpu0-mig1 NVIDIA H200 MIG 1g.18gb (cuda:0)"
WAIT_FOR_READS = (  # a condition with a deadline: the slow cadence (processes) has run twice
    "import time, nbgpumon\n_m = nbgpumon.monitor()\n_d = time.monotonic() + 30\n"
    "while (not _m._session.process_source.processes or _m._session.sampler.ticks < 25) "
    "and time.monotonic() < _d:\n"
    "    time.sleep(0.02)\n"
    "print('READ', bool(_m._session.process_source.processes) and _m._session.sampler.ticks >= 25)"
)
WAIT_FOR_TICKS = (  # ... or only that the sampler has ticked 25 times since the load
    "import time, nbgpumon\n_m = nbgpumon.monitor()\n_d = time.monotonic() + 30\n"
    "while _m._session.sampler.ticks < 25 and time.monotonic() < _d:\n    time.sleep(0.02)\n"
    "print('TICKS', _m._session.sampler.ticks >= 25, _m._session.sampler.running)"
)
GROW = (  # the instance's NVML "used" grows by 2 GiB during this cell, as a real allocation's
    "import pynvml  # the fake, first on the kernel's path\n"
    "pynvml._config['devices'][0]['mig'][0]['used'] += 2 * 2**30"
)


TICKED = (  # every view after it sees the grown memory: the sampler has read it since GROW
    "import time, nbgpumon\n_m = nbgpumon.monitor()\n_w = _m._session.sampler.ticks + 2\n"
    "_d = time.monotonic() + 30\n"
    "while _m._session.sampler.ticks < _w and time.monotonic() < _d:\n    time.sleep(0.01)\n"
    "print('TICKED', _m._session.sampler.ticks >= _w)"
)


def _scrape_cell(port: int) -> str:
    return (
        "import json, urllib.request\n"
        f"_body = urllib.request.urlopen('http://127.0.0.1:{port}/metrics', timeout=10).read()\n"
        "print('METRICS=' + json.dumps(_body.decode()))"
    )


WIDGET_CELL = (
    "import json, nbgpumon\nprint('WIDGET=' + json.dumps(nbgpumon.monitor().widget().devices))"
)


@pytest.fixture(scope="module")
def on_mig_1() -> dict:
    port = free_port()
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            WAIT_FOR_READS,
            "%gpumon status",
            GROW,
            TICKED,
            RECORDS_CELL,
            f"%gpumon export {port}",
            _scrape_cell(port),
            WIDGET_CELL,
            "%gpumon",
            "%gpumon snapshot",
        ],
        env={**fake_nvml_env(**MACHINE), "CUDA_VISIBLE_DEVICES": MIG_1},
    )
    assert runs[1].stdout.split() == ["READ", "True"], runs[1].text
    assert runs[4].stdout.split() == ["TICKED", "True"], runs[4].text
    return {
        "load": runs[0].text,
        "status": runs[2].text,
        "records": runs[5].json_after("RECORDS="),
        "metrics": runs[7].json_after("METRICS="),
        "widget": runs[8].json_after("WIDGET="),
        "chart": runs[9].text,
        "snapshot": runs[10].text,
        "all": "".join(r.text for r in runs),
    }


def test_the_loaded_line_names_the_mig_device_and_its_gpu_once(on_mig_1):
    load = on_mig_1["load"].strip()
    assert load.startswith(
        "nbgpumon 0.1.0: watching 1 GPU (NVIDIA H200 MIG 1g.18gb) on MIG device gpu0-mig1 "
        "every 0.1 s"
    ), load
    assert len(load.splitlines()) == 1 and load.count("H200") == 1
    assert "not visible" not in load


def test_status_lists_the_mig_device_its_memory_and_its_gpu_and_utilization_unavailable(on_mig_1):
    status = on_mig_1["status"]
    assert f"  gpu0-mig1: NVIDIA H200 MIG 1g.18gb, {MIG_1}, cuda:0, 16.5 GiB\n" in status
    assert (
        "    MIG device: GPU instance 1, compute instance 0, profile 1g.18gb, on gpu0 "
        f"({GPU_UUID}); its memory is the instance's"
    ) in status
    assert (
        f"    other MIG devices of gpu0: gpu0-mig2 3g.71gb ({MIG_2}, 5.0 GiB used of 71.0 GiB)"
    ) in status
    assert "    utilization: unavailable (not supported on this device)" in status
    assert "140 GiB" not in status  # the GPU's whole memory is not what the kernel has
    assert status.count("NVIDIA H200") == 1  # the GPU named once: in its MIG device's name


def test_the_chart_s_status_line_says_which_mig_device_and_what_is_unavailable(on_mig_1):
    first = on_mig_1["chart"].splitlines()[0]
    assert "· MIG device gpu0-mig1 (1g.18gb) ·" in first, first
    assert "unavailable: gpu0-mig1 utilization" in first, first
    assert f"{LABEL}: 6.0 GiB used of 16.5 GiB" in on_mig_1["chart"]  # after GROW's 2 GiB


def test_the_snapshot_shows_the_instance_s_memory_and_processes_and_no_utilization(on_mig_1):
    snapshot = on_mig_1["snapshot"]
    assert f"{LABEL}:\n" in snapshot
    assert "used (NVML) 6.0 GiB" in snapshot and "total 16.5 GiB" in snapshot
    assert re.search(r"^  gpu0-mig1: PID \d+ this kernel: 3\.0 GiB$", snapshot, re.M), snapshot
    assert "PID 4242" not in snapshot  # the other instance's process is not on this one
    assert "  util:" not in snapshot  # NVML gives none on a MIG device: no number is made up
    assert "power: power 310 W" in snapshot  # the whole GPU's


def test_the_ledger_charges_the_cell_with_the_instance_s_memory(on_mig_1):
    grew = cells_by_label(on_mig_1["records"])[
        "import pynvml  # the fake, first on the kernel's path"
    ]
    assert grew["gpu0.nvml_used_before"] == 4 * GIB  # the instance's, not the GPU's 9 GiB
    assert grew["gpu0.nvml_used_after"] == 6 * GIB
    assert grew["gpu0.nvml_used_delta"] == 2 * GIB
    assert grew["gpu0.util_mean"] is None  # unavailable on a MIG device, not a made-up 0


def test_the_exporter_labels_the_instance_as_dcgm_does(on_mig_1):
    text = on_mig_1["metrics"]
    (used,) = samples(text, "nbgpumon_gpu_memory_used_bytes")
    labels, value = used
    assert value == 6 * GIB and labels.pop("Hostname")  # the instance's, after GROW
    assert labels == {
        "gpu": "0", "UUID": GPU_UUID, "modelName": "NVIDIA H200",
        "GPU_I_PROFILE": "1g.18gb", "GPU_I_ID": "1",
    }  # fmt: skip
    (total,) = samples(text, "nbgpumon_gpu_memory_total_bytes")
    assert total[1] == 17716740096
    assert samples(text, "nbgpumon_gpu_utilization_ratio") == []  # unavailable: left out
    (power,) = samples(text, "nbgpumon_gpu_power_watts")  # the whole GPU's, as DCGM has it
    assert power[1] == 310.0 and power[0]["GPU_I_ID"] == "" and power[0]["GPU_I_PROFILE"] == ""


def test_the_widget_s_devices_are_the_mig_device_with_its_profile_and_memory(on_mig_1):
    assert on_mig_1["widget"] == [
        {
            "index": 0, "name": "NVIDIA H200 MIG 1g.18gb", "memory_total": 17716740096,
            "cuda_index": 0, "cuda_label": "cuda:0", "unavailable": ["gpu_util", "mem_util"],
            "mig_profile": "1g.18gb", "gpu_instance": 1,
        }
    ]  # fmt: skip
    assert "Traceback" not in on_mig_1["all"] and "Error" not in on_mig_1["all"]


def test_a_mig_uuid_that_is_not_there_is_one_line_and_the_sampler_keeps_running():
    missing = "MIG-deadbeef-0000-5000-8000-000000000000"
    runs = run_cells(
        ["%load_ext nbgpumon", WAIT_FOR_TICKS, "%gpumon status", "x = 1", "%gpumon cells"],
        env={**fake_nvml_env(**MACHINE), "CUDA_VISIBLE_DEVICES": missing},
    )
    load = runs[0].text.strip().splitlines()
    assert load[0].endswith(
        "(gpu0 not visible to this kernel) every 0.1 s; %gpumon status for details"
    )
    assert load[1:] == [
        f"nbgpumon: CUDA_VISIBLE_DEVICES names {missing}, which is no MIG device of this "
        "machine: CUDA sees no device from there on (nvidia-smi -L lists them)"
    ]
    assert runs[1].stdout.split() == ["TICKS", "True", "True"]  # the sampler kept sampling
    status = runs[2].text
    assert f"  gpu0: NVIDIA H200, {GPU_UUID}, not visible to this kernel, 140 GiB" in status
    assert (
        f"    MIG mode on: gpu0-mig1 1g.18gb ({MIG_1}, 4.0 GiB used of 16.5 GiB), gpu0-mig2 "
        f"3g.71gb ({MIG_2}, 5.0 GiB used of 71.0 GiB); none is this kernel's"
    ) in status
    assert re.search(r"^\[\d+\] ", runs[4].text, re.MULTILINE), runs[4].text  # the ledger works
    assert not any(r.error for r in runs) and "Traceback" not in "".join(r.text for r in runs)


# -- in this process: the source, the exporter read back, a GPU with MIG off ------------------
def _source(machine: dict, monkeypatch, visible: str | None) -> NvmlSource:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    source = NvmlSource(fake_pynvml(**machine))
    assert source.open()
    return source


def test_with_the_variable_unset_cuda_s_one_mig_device_is_the_gpu_s_first(monkeypatch):
    source = _source(MACHINE, monkeypatch, None)
    (device,) = source.devices
    assert (device.uuid, device.cuda_index, device.mig.gpu_instance) == (MIG_1, 0, 1)
    assert source.mapping_note == ""


def test_a_mig_device_reads_its_own_memory_the_gpu_s_power_and_no_utilization(monkeypatch):
    source = _source(MACHINE, monkeypatch, MIG_2)
    row = dict(zip([c.split(".")[-1] for c in source.columns()], source.read(), strict=True))
    assert (row["mem_used"], row["mem_total"]) == (5 * GIB, 76235669504)
    assert row["gpu_util"] is None and row["mem_util"] is None
    assert row["power"] == 310.0 and row["temperature"] == 55  # from the GPU's handle
    assert [(p.pid, p.used_memory) for p in source.read_processes()] == [(4242, 5 * GIB)]
    assert source.library.disabled_metrics() == {(0, "utilization"): "not supported on this device"}
    assert source.read_memory() == [5 * GIB]  # the ledger's reading


def test_a_gpu_that_can_do_mig_with_it_off_reads_exactly_as_one_that_cannot(monkeypatch):
    plain = {"name": "NVIDIA H200", "uuid": GPU_UUID, "used": 3 * GIB}
    seen = []
    for machine in (
        {"devices": [plain]},  # NotSupported: a GPU that cannot do MIG
        {"devices": [{**plain, "mig_mode": 0}]},  # the H200 as we have it: MIG off
        {"devices": [plain], "missing": ["nvmlDeviceGetMigMode"]},  # an old driver
    ):
        source = _source(machine, monkeypatch, "0")
        seen.append((source.devices, source.read(), source.notes(), source.mapping_note))
        assert source.library.disabled_metrics() == {}
    assert seen[0] == seen[1] == seen[2]
    assert seen[0][0][0].mig is None and seen[0][0][0].name == "NVIDIA H200"


def test_the_cluster_view_reads_the_exporter_s_mig_device_back_as_dcgm_s(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", MIG_1)
    mon = Monitor(nvml_module=fake_pynvml(**MACHINE))
    try:
        mon._session.sampler.tick()
        text = SessionCollector(mon.data, hostname="node-a").text()
    finally:
        mon.close()
    series = [
        Series({"__name__": name, **labels}, ((1.0, value),))
        for name in ("nbgpumon_gpu_memory_used_bytes", "nbgpumon_gpu_power_watts")
        for labels, value in samples(text, name)
    ]
    reading = reading_from(1.0, series)
    assert reading.values["node:node-a.gpu0-mig1.mem_used"] == 4 * GIB
    assert reading.values["node:node-a.gpu0.power"] == 310.0
    assert reading.gpus[("node-a", "gpu0-mig1")]["mig_profile"] == "1g.18gb"


def test_a_legacy_mig_name_and_a_uuid_prefix_name_the_same_device(monkeypatch):
    for visible in (f"MIG-{GPU_UUID}/2/0", MIG_2[:12]):
        (device,) = _source(MACHINE, monkeypatch, visible).devices
        assert (device.uuid, device.cuda_index) == (MIG_2, 0), visible


def test_torch_s_uuid_of_the_mig_device_keeps_it_cuda0(monkeypatch):
    source = _source(MACHINE, monkeypatch, MIG_1)
    source.remap_cuda([MIG_1.removeprefix("MIG-")])  # as torch words a device's UUID
    assert source.devices[0].cuda_index == 0
    source.remap_cuda(["GPU-" + MIG_1.removeprefix("MIG-")])
    assert source.devices[0].cuda_index == 0


def test_a_recording_keeps_the_mig_device_and_reads_a_malformed_one_as_none(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", MIG_1)
    mon = Monitor(nvml_module=fake_pynvml(**MACHINE))
    try:
        mon.record(tmp_path / "run.sqlite")
        mon._session.sampler.tick()
    finally:
        mon.close()
    (device,) = nbgpumon.load(tmp_path / "run.sqlite").devices
    assert device.label == LABEL
    assert device.mig == MigInstance("NVIDIA H200", GPU_UUID, "1g.18gb", 1, 0)
    assert MigInstance.recorded("1g.18gb") is None and MigInstance.recorded(None) is None
    odd = MigInstance.recorded({"profile": 7, "gpu_instance": True, "compute_instance": "0"})
    assert odd == MigInstance("", "", "7", None, None)
