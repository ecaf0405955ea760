"""The recipe "Add a device source" (docs/recipes.md) holds: a toy device source in one
package with one registration line (tests/toy_device/), chosen by ``%config
GPUMon.device_source = "toy"`` before ``%load_ext nbgpumon`` in a real kernel, is what
``%gpumon status``, the timeline, the widget, the recording and the exporter show, with no
other change; it has none of the optional roles, and nothing of theirs is shown. NVML's source
registers itself the same way, and a value of the setting that names no registered source is
one line naming those that are.

Registering is for the whole process, so the toy lives in a kernel (or a child process) of its
own: this process's registries stay the built-ins' (tests/test_registry.py)."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from traitlets import TraitError

import nbgpumon
from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.metrics import sources_in
from nbgpumon._session.config import GPUMon
from nbgpumon._sources.devices import DevicePlugin, device_source, device_sources
from nbgpumon._sources.devices import register_device_source as register
from nbgpumon._sources.devices.nvml import LABEL, NvmlSource
from nbgpumon._sources.devices.protocol import (
    CallCountRole,
    CudaMappingRole,
    DeviceSource,
    DiagnosticsRole,
    HangWatchRole,
    MigRole,
    ProcessRole,
    role,
)

from notebook_runner import fake_nvml_env, fake_pynvml, run_cells
from packed_history import unpack_history
from prometheus_server import free_port, samples

TESTS = Path(__file__).resolve().parent
NVML_PACKAGE = Path(nbgpumon.__file__).resolve().parent / "_sources" / "devices" / "nvml"
GIB = 2**30
ROLES = (MigRole, ProcessRole, CallCountRole, HangWatchRole, DiagnosticsRole, CudaMappingRole)

GROW_CELL = "nbgpumon.monitor()._session.device_source.used += 2 * 2**30  # the toy grows"
# Waits (a condition, with a deadline) for the fan, read at the toy's detail cadence, and a few
# rows that carry it for the recording.
WAIT_FOR_THE_FAN = (
    "import time as _t\n_m = nbgpumon.monitor()\n"
    "def _fan(): return (_m.timeline.latest() or {}).get('gpu0.toy.fan_speed')\n"
    "_d = _t.monotonic() + 30\n"
    "while _fan() != 30 and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "_w = _m._session.sampler.ticks + 3\n"
    "while _m._session.sampler.ticks < _w and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "print('FAN', _fan())"
)
SOURCE_CELL = (
    "_m = nbgpumon.monitor()\n"
    "print('SOURCE', _m.config.device_source, type(_m._session.device_source).__name__)"
)
SHOWN_CELL = (
    "import base64, json, math, urllib.request\n"
    "from nbgpumon._views.status.session_status import status_line\n"
    "_w = _m.widget()\n"
    "_row = _m.timeline.latest()\n"
    "print('SHOWN=' + json.dumps({\n"
    "    'type': type(_m._session.device_source).__name__,\n"
    "    'setting': _m.config.device_source,\n"
    "    'columns': list(_m.timeline.columns),\n"
    "    'latest': {c: (None if math.isnan(v) else v) for c, v in _row.items()\n"
    "               if c.startswith('gpu')},\n"
    "    'line': status_line(_m.data.status()),\n"
    "    'widget_columns': _w.columns, 'widget_devices': _w.devices,\n"
    "    'history': base64.b64encode(_w.history).decode(),\n"
    "    'exported': urllib.request.urlopen(URL, timeout=10).read().decode(),\n"
    "    'records': [(r.label, r.devices[0].device_used_delta) for r in nbgpumon.cells()],\n"
    "}))"
)


def _in_a_kernel(cells: list[str]) -> list:
    """``cells`` run in a fresh kernel that can import the toy, on the fake NVML's one GPU
    (where the toy is chosen, NVML is never asked); none may fail."""
    env = fake_nvml_env(devices=[{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}])
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env["PYTHONPATH"]])
    runs = run_cells(cells, env=env)
    failed = [run.text for run in runs if run.error is not None]
    assert not failed, failed
    return runs


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "toy.sqlite"
    port = free_port()
    runs = _in_a_kernel(
        [
            "import nbgpumon, toy_device",  # registered before the load, which reads it
            '%config GPUMon.device_source = "toy"',
            "%load_ext nbgpumon",
            f"%gpumon record {path}\n%gpumon export {port}\nURL = "
            f"'http://127.0.0.1:{port}/metrics'",
            GROW_CELL,
            WAIT_FOR_THE_FAN,
            "%gpumon status",
            SHOWN_CELL,
            "%gpumon record off\n%gpumon export off",
        ]
    )
    assert runs[5].stdout.split() == ["FAN", "30.0"], runs[5].text
    return runs, runs[7].json_after("SHOWN="), path


def test_the_setting_before_the_load_picks_the_toy(toy_run):
    runs, shown, _ = toy_run
    assert (shown["type"], shown["setting"]) == ("ToyDevices", "toy")
    assert "watching 1 GPU (Toy GPU)" in runs[2].stdout, runs[2].text


def test_status_says_the_toy_and_its_own_metrics_in_its_words(toy_run):
    runs, shown, _ = toy_run
    status = runs[6].text.splitlines()
    # (no binding: the toy has no diagnostics role)
    assert "Toy: driver toy-driver 1.0, 1 GPU" in status, status
    assert any(ln.startswith("  gpu0: Toy GPU, TOY-0000, cuda:0, 8.0 GiB") for ln in status)
    # its cadences are its registration's, worded by its metrics' labels; it lists no
    # processes, so no process list's cadence and no children's
    sampler = status[0]
    assert "toy fan every 1 s" in sampler, sampler
    assert not re.search("power|temperature|PCIe|processes|children", sampler), sampler
    assert not any(ln.startswith("processes on the GPUs") for ln in status)
    # its cost: no library calls counted (the toy has no such role)
    assert status[1].startswith("while idle: every 1 s"), status[1]
    assert status[2].startswith("sampler cost") and "call" not in status[2], status[2]
    assert shown["line"].startswith("sampling every 0.1 s"), shown["line"]


def test_the_timeline_has_the_toy_s_columns_and_values(toy_run):
    _, shown, _ = toy_run
    toy = [c for c in shown["columns"] if c.startswith("gpu0.toy.")]
    assert toy == ["gpu0.toy.mem_used", "gpu0.toy.mem_total", "gpu0.toy.gpu_util",
                   "gpu0.toy.fan_speed"]  # fmt: skip
    # no process role: no process split of its memory
    assert not any(c.startswith("gpu0.process.") for c in shown["columns"]), shown["columns"]
    latest = shown["latest"]
    assert latest["gpu0.toy.mem_used"] == 3 * GIB and latest["gpu0.toy.mem_total"] == 8 * GIB
    assert latest["gpu0.toy.gpu_util"] == 42 and latest["gpu0.toy.fan_speed"] == 30


def test_the_widget_sends_the_toy_s_columns_and_values(toy_run):
    _, shown, _ = toy_run
    names = [c["name"] for c in shown["widget_columns"]]
    assert names == shown["columns"]
    fan = shown["widget_columns"][names.index("gpu0.toy.fan_speed")]
    assert (fan["group"], fan["panel"], fan["label"], fan["source"]) == (
        "device", "fan", "toy fan", "toy",
    )  # fmt: skip
    assert [d["name"] for d in shown["widget_devices"]] == ["Toy GPU"]
    history = unpack_history(base64.b64decode(shown["history"]))
    used = history.mean[:, names.index("gpu0.toy.mem_used")]
    assert 3 * GIB in [v for v in used.tolist() if not math.isnan(v)]


def test_a_cell_s_record_has_the_toy_s_device_memory(toy_run):
    _, shown, _ = toy_run
    records = dict(tuple(r) for r in shown["records"])
    assert records[GROW_CELL] == 2 * GIB


def test_the_exporter_serves_the_toy_s_figures_under_its_label(toy_run):
    _, shown, _ = toy_run
    text = shown["exported"]
    ((labels, used),) = samples(text, "nbgpumon_gpu_memory_used_bytes")
    assert used == 3 * GIB and labels["gpu"] == "0"
    help_line = next(ln for ln in text.splitlines() if ln.startswith("# HELP nbgpumon_gpu_memory"))
    assert "Toy" in help_line, help_line
    assert samples(text, "nbgpumon_gpu_fan_speed_ratio")[0][1] == pytest.approx(0.3)


def test_the_recording_keeps_the_toy_s_columns_and_records(toy_run):
    _, _, path = toy_run
    # read back here, where no toy is registered: its figures are in the file
    session = nbgpumon.load(path)
    assert {"gpu0.toy.mem_used", "gpu0.toy.fan_speed"} <= set(session.columns)
    assert session.latest()["gpu0.toy.fan_speed"] == 30
    (grew,) = [r for r in session.records if r.label == GROW_CELL]
    assert grew.devices[0].device_used_delta == grew.devices[0].nvml_used_delta == 2 * GIB


# -- the setting: a bad value, a change after the load, the workflow the refusal gives --------
def test_a_bad_value_and_a_change_after_the_load_are_one_line_each():
    runs = _in_a_kernel(
        [
            "import nbgpumon, toy_device",
            '%config GPUMon.device_source = "nope"',
            "%load_ext nbgpumon",
            '%config GPUMon.device_source = "toy"',
            SOURCE_CELL,
            "%unload_ext nbgpumon",
            '%config GPUMon.device_source = "toy"',
            "%load_ext nbgpumon",
            SOURCE_CELL,
        ]
    )
    (bad,) = [ln for ln in runs[2].text.splitlines() if "device_source" in ln]
    assert (
        "GPUMon.device_source is one of the registered device sources ('nvml', 'toy'), not 'nope'"
    ) in bad, runs[2].text
    assert "watching 1 GPU (Fake H200)" in runs[2].text
    # once loaded, another value would not be used: refused, with the way to change it
    (later,) = [ln for ln in runs[3].text.splitlines() if ln.strip()]
    assert "GPUMon.device_source is read when nbgpumon loads" in later, later
    assert "%unload_ext nbgpumon, set it, then %load_ext nbgpumon" in later
    assert runs[4].stdout.split() == ["SOURCE", "nvml", "NvmlSource"], runs[4].text
    # the way it gives
    assert "watching 1 GPU (Toy GPU)" in runs[7].text, runs[7].text
    assert runs[8].stdout.split() == ["SOURCE", "toy", "ToyDevices"], runs[8].text


def test_a_value_that_names_no_registered_source_is_refused_naming_those_that_are():
    with pytest.raises(TraitError) as refused:
        GPUMon(device_source="nope")
    assert str(refused.value) == (
        "GPUMon.device_source is one of the registered device sources ('nvml'), not 'nope'"
    )


# -- NVML registers the same way ------------------------------------------------------------
def test_nvml_registers_itself_with_one_line_and_is_the_default():
    lines = (NVML_PACKAGE / "__init__.py").read_text().splitlines()
    assert sum("register_device_source(" in ln for ln in lines) == 1
    assert [p.name for p in device_sources()] == ["nvml"]  # this process: the built-in only
    plugin = device_source("nvml")
    assert plugin is not None and (plugin.label, plugin.new_source) == (LABEL, NvmlSource)
    assert plugin.cadences["power"] == "detail" and plugin.cadences["mem_used"] == "fast"
    assert GPUMon().device_source == "nvml"
    assert register(plugin) is plugin  # again (a reload): nothing changes
    with pytest.raises(ValueError, match="a device source named 'nvml' is registered already"):
        register(DevicePlugin("nvml", "Other", NvmlSource))


def test_nvml_s_source_has_the_core_and_every_role_the_session_asks_for():
    mon = Monitor(nvml_module=fake_pynvml())
    try:
        source = mon._session.device_source
        assert isinstance(source, DeviceSource)
        assert (source.name, source.label) == ("nvml", "NVML")
        for kind in ROLES:
            assert role(source, kind) is source, kind.__name__
    finally:
        mon.close()


def test_a_role_is_found_by_all_its_members_without_running_them():
    class Told:  # the diagnostics role, whose binding a lookup must not read (it may cost ms)
        @property
        def binding_version(self) -> str:
            raise AssertionError("a role's property was run")

        def notes(self) -> list[str]:
            return []

        def disabled_reads(self) -> dict[tuple[int, str], str]:
            return {}

    class HalfTold:  # one member short
        def notes(self) -> list[str]:
            return []

    told = Told()
    assert role(told, DiagnosticsRole) is told
    assert role(HalfTold(), DiagnosticsRole) is None
    assert role(told, CudaMappingRole) is None


def test_this_process_registers_no_toy():
    assert "toy" not in sources_in("device")
    assert device_source("toy") is None


# -- the same toy given to a Monitor directly (new_device_source), in a child process --------
CHILD = """
import json, sys
import toy_device
import nbgpumon
from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.metrics import describe_columns
from nbgpumon._views.chart.panels import chart_panels
from nbgpumon._views.status.session_status import status_line, status_lines
from nbgpumon._sources.devices import protocol
from nbgpumon._api.exporter_families import SessionCollector
from nbgpumon._views.memory.explain import measured_words

mon = Monitor(new_device_source=toy_device.ToyDevices)
toy = mon._session.device_source
assert isinstance(toy, protocol.DeviceSource), "the toy does not implement the protocol"
for kind in sys.argv[2:]:  # the optional roles' names
    assert protocol.role(toy, getattr(protocol, kind)) is None, f"the toy has {kind}"
mon.start()
assert mon.wait_for_samples(), "no sample"
recorded = mon.record(sys.argv[1])
with mon.track("grow"):
    toy.used += 2 * toy_device.GIB
record = mon.cells()[-1]
data = mon.data
exported = SessionCollector(data).text()
columns = list(mon.timeline.columns)
out = {
    "type": type(toy).__name__,
    "status": status_lines(data.status()),
    "line": status_line(data.status()),
    "columns": columns,
    "described": [c["name"] for c in describe_columns(columns) if c["device"] == 0],
    "panels": [[p.device, p.name, p.limit] for p in chart_panels(columns)],
    "before": record.devices[0].device_used_before,
    "after": record.devices[0].device_used_after,
    "delta": record.devices[0].device_used_delta,
    "exported": [ln for ln in exported.splitlines() if "gpu_memory_used_bytes" in ln],
    "recorded": recorded,
    "explained": measured_words(mon.explain()[0]),
}
mon.record(None)
mon.close()
back = nbgpumon.load(sys.argv[1])
out["loaded_columns"] = list(back.columns)
out["loaded_delta"] = [r.devices[0].device_used_delta for r in back.records]
out["loaded_used"] = [r.devices[0].nvml_used_delta for r in back.records]  # the old name too
print("RESULT=" + json.dumps(out))
"""


def _run_child(script: str, *args: str) -> Any:
    """What ``script``, run in a child process that can import the toy, printed after RESULT=."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT="))
    return json.loads(line[len("RESULT=") :])


def test_a_toy_given_to_a_monitor_is_found_everywhere_the_device_is(tmp_path):
    got = _run_child(CHILD, str(tmp_path / "toy.sqlite"), *(kind.__name__ for kind in ROLES))
    assert got["type"] == "ToyDevices"
    # status: the source's own line, in its label's words (no binding: it has no diagnostics
    # role), and its GPU
    assert "Toy: driver toy-driver 1.0, 1 GPU" in got["status"], got["status"]
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
    # explain: a source that lists no processes has no figure for this one, and says so
    assert got["explained"] == "what the frameworks hold and reserve: Toy lists no processes"


# -- a late start, told without the hang watch role: the session times the start itself ------
LATE_CHILD = """
import json, time
import toy_device
from nbgpumon._api.monitor import Monitor
from nbgpumon._session.device_open import OPEN_WAIT
from nbgpumon._views.status.session_status import not_answering

class SlowToy(toy_device.ToyDevices):  # its start takes longer than the load waits
    def open(self):
        time.sleep(OPEN_WAIT + 0.5)
        return super().open()

mon = Monitor(new_device_source=SlowToy)
said = [not_answering(mon.data.status().live.devices)]
deadline = time.monotonic() + 30
while not getattr(mon._session.devices_started_late(), "answered", False):
    if time.monotonic() > deadline:
        break
    time.sleep(0.02)
said.append(not_answering(mon.data.status().live.devices))
mon.close()
print("RESULT=" + json.dumps(said))
"""


def test_a_toy_that_starts_late_is_told_still_starting_then_answered():
    still, answered = _run_child(LATE_CHILD)
    assert re.fullmatch(r"Toy has not answered for [0-9.]+ s \(still starting\)", still), still
    assert re.fullmatch(
        r"Toy answered after [0-9.]+ s, with 1 GPU: %reload_ext nbgpumon watches them", answered
    ), answered
