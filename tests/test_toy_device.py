"""The recipe "Add a device source" (docs/architecture.md) holds: a toy device source in one
file (tests/toy_device.py), given to a session, is found in status, the ledger (a region's
device memory), the chart's columns, the recording (written and read back) and the exporter,
with no other change. It registers metrics in the global registry, so it runs in a child
process; this process's registry stays as tests/test_registry.py expects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.metrics import sources_in
from nbgpumon._sources.devices.protocol import DeviceSource

from notebook_runner import fake_pynvml

TESTS = Path(__file__).resolve().parent
GIB = 2**30

CHILD = """
import json, sys
import toy_device
import nbgpumon
from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.metrics import describe_columns
from nbgpumon._views.chart.panels import chart_panels
from nbgpumon._views.words.status import status_line, status_lines
from nbgpumon._sources.devices.protocol import DeviceSource
from nbgpumon._api.exporter_families import SessionCollector

mon = Monitor(new_device_source=toy_device.ToyDevices)
toy = mon._session.device_source
assert isinstance(toy, DeviceSource), "the toy does not implement the protocol"
mon.start()
assert mon.wait_for_samples(), "no sample"
recorded = mon.record(sys.argv[1])
with mon.track("grow"):
    toy.used += 2 * toy_device.GIB
record = mon.cells()[-1]
exported = SessionCollector(mon).text()
out = {
    "type": type(toy).__name__,
    "status": status_lines(mon.status()),
    "line": status_line(mon.status()),
    "columns": list(mon.columns),
    "described": [c["name"] for c in describe_columns(mon.columns) if c["device"] == 0],
    "panels": [[p.device, p.name, p.limit] for p in chart_panels(mon.columns)],
    "before": record.devices[0].device_used_before,
    "after": record.devices[0].device_used_after,
    "delta": record.devices[0].device_used_delta,
    "exported": [ln for ln in exported.splitlines() if "gpu_memory_used_bytes" in ln],
    "recorded": recorded,
}
mon.record(None)
mon.close()
back = nbgpumon.load(sys.argv[1])
out["loaded_columns"] = list(back.columns)
out["loaded_delta"] = [r.devices[0].device_used_delta for r in back.records]
out["loaded_used"] = [r.devices[0].nvml_used_delta for r in back.records]  # the old name too
print("RESULT=" + json.dumps(out))
"""


def _run_toy(tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "toy.sqlite")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT="))
    return json.loads(line[len("RESULT=") :])


def test_a_toy_device_source_is_found_everywhere_the_device_is(tmp_path):
    got = _run_toy(tmp_path)
    assert got["type"] == "ToyDevices"
    # status: the source's own line, in its label's words, and its GPU
    assert "Toy: driver toy-driver 1.0, binding toy-binding 0.1, 1 GPU" in got["status"]
    assert any(ln.startswith("  gpu0: Toy GPU, TOY-0000, cuda:0, 8.0 GiB") for ln in got["status"])
    # the timeline's and the chart's columns, by the source's name
    assert got["columns"][:3] == ["gpu0.toy.mem_used", "gpu0.toy.mem_total", "gpu0.toy.gpu_util"]
    assert "gpu0.toy.mem_used" in got["described"]
    assert [0, "memory", "gpu0.toy.mem_total"] in got["panels"], got["panels"]
    assert [0, "util", None] in got["panels"], got["panels"]
    # the ledger: the region's device memory, from the source's read_memory()
    assert (got["before"], got["after"], got["delta"]) == (GIB, 3 * GIB, 2 * GIB)
    # the exporter: its figures under the device family, its label in the HELP
    assert any("(Toy)" in ln for ln in got["exported"] if ln.startswith("# HELP")), got["exported"]
    assert any(ln.startswith("nbgpumon_gpu_memory_used_bytes{") for ln in got["exported"])
    # the recording, read back
    assert got["recorded"].startswith("recording to ")
    assert "gpu0.toy.mem_used" in got["loaded_columns"]
    assert got["loaded_delta"] == got["loaded_used"] == [2 * GIB]


def test_this_process_registers_no_toy_metric():
    assert "toy" not in sources_in("device")


def test_nvmls_source_implements_the_protocol_the_session_asks():
    mon = Monitor(nvml_module=fake_pynvml())
    try:
        assert isinstance(mon._session.device_source, DeviceSource)
        assert (mon._session.device_source.name, mon._session.device_source.label) == (
            "nvml",
            "NVML",
        )
    finally:
        mon.close()
