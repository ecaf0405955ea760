"""The exporter's families for the processes cells start, scraped over HTTP as Prometheus would:
a monitor in this process on the fake NVML (tests/fake_nvml), whose cells start real children
that say what GPU memory they hold (tests/children/holder.py); and the split of each GPU's
memory between this kernel, its children and the other processes."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbgpumon import GPUMon, Monitor
from nbgpumon._api.exporter_children import CELLS, COMMAND_CHARS, MAX_CHILDREN
from nbgpumon._sources.processes.children import ChildGpu, ChildUsage

from notebook_runner import fake_pynvml
from prometheus_server import free_port, samples
from waiting import until

GIB, MIB = 2**30, 2**20
HOST = socket.gethostname()
HOLDER = Path(__file__).parent / "children" / "holder.py"
DEADLINE = 30  # seconds any awaited condition gets
KERNEL, OTHER = 8 * MIB, 512 * MIB  # this process's listing and another user's (PID 1)
CHILD = 3 * GIB  # what the first test's child holds
USED = KERNEL + OTHER + CHILD  # the fake GPU's memory in use: its processes' together


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        return response.read().decode()


def only(text: str, name: str, **labels: str) -> tuple[dict[str, str], float]:
    """The one sample of ``name`` whose labels include ``labels``."""
    found = [(got, v) for got, v in samples(text, name) if labels.items() <= got.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0]


@pytest.fixture
def gpu_use(tmp_path: Path, monkeypatch) -> Path:
    use = tmp_path / "gpu-use"
    use.mkdir()
    monkeypatch.setenv("GPU_USE", str(use))  # where the holders say what they hold
    monkeypatch.delenv("RANK", raising=False)
    return use


@pytest.fixture
def monitor(gpu_use: Path) -> Iterator[tuple[Monitor, int]]:
    """A sampling monitor on one fake GPU that lists this process, another user's and this
    process's children that hold memory, exporting on a free port."""
    nvml = fake_pynvml(
        devices=[{"name": "Fake H200", "uuid": "GPU-aaaa", "used": USED, "total": 141 * GIB}],
        processes=[
            {"pid": "self", "used": KERNEL},
            {"pid": 1, "used": OTHER},
            {"pid": "descendants", "used_from": str(gpu_use)},
        ],
    )
    mon = Monitor(GPUMon(interval=0.05, process_interval=0.05), nvml_module=nvml)
    port = free_port()
    try:
        mon.start()
        mon.export(port)
        yield mon, port
    finally:
        mon.close()


def holder(used: int, sm: int, seconds: float) -> list[str]:
    return [sys.executable, str(HOLDER), str(used), str(sm), str(seconds)]


def test_a_cell_s_child_is_exported_with_its_peak_its_cell_and_whether_it_runs(monitor):
    mon, port = monitor
    pipeline = mon._session.cells_pipeline
    opened = pipeline.begin(5, "kept = subprocess.Popen(['python', 'holder.py', ...])")
    child = subprocess.Popen(holder(CHILD, 87, 120))
    try:
        until(
            lambda: mon.data.latest() and mon.data.latest()["gpu0.procs.children_mem"] == CHILD,
            "the child on the GPU",
        )
        pipeline.end(opened, "ok", "", 5, None)
        text = scrape(port)
        labels, peak = only(text, "nbgpumon_child_gpu_memory_peak_bytes", pid=str(child.pid))
        assert peak == CHILD
        assert labels["cell"] == "5" and labels["gpu"] == "0" and labels["UUID"] == "GPU-aaaa"
        assert labels["Hostname"] == HOST and labels["rank"] == ""
        assert labels["exact"] == "false"  # no accounting on the fake GPU: the highest sampled
        assert "holder.py" in labels["command"]
        assert only(text, "nbgpumon_child_running", pid=str(child.pid))[1] == 1.0
        # the split of the GPU's memory, at the same sample: each part from the process list
        split = [
            only(text, f"nbgpumon_{name}_gpu_memory_bytes", gpu="0", UUID="GPU-aaaa")[1]
            for name in ("kernel", "children", "other_processes")
        ]
        assert split == [KERNEL, CHILD, OTHER]
        assert sum(split) == only(text, "nbgpumon_gpu_memory_used_bytes", gpu="0")[1] == USED
    finally:
        child.kill()
        child.wait()

    # the child ended after its cell: its record is brought up to date when the cells are read
    def ended() -> bool:
        record = mon.cells()[-1]
        return bool(record.children) and not record.children[0].running

    until(ended, "the child's end in its cell's record")
    text = scrape(port)
    assert only(text, "nbgpumon_child_running", pid=str(child.pid), cell="5")[1] == 0.0
    assert only(text, "nbgpumon_child_gpu_memory_peak_bytes", pid=str(child.pid))[1] == CHILD
    until(lambda: mon.data.latest()["gpu0.procs.children_mem"] == 0, "the child gone from the GPU")
    text = scrape(port)
    assert only(text, "nbgpumon_children_gpu_memory_bytes", gpu="0")[1] == 0


def test_a_shell_escape_s_script_has_its_peak_and_utilization_after_its_cell(monitor):
    mon, port = monitor
    pipeline = mon._session.cells_pipeline
    opened = pipeline.begin(7, "!python holder.py")
    command = f"exec {' '.join(holder(GIB, 60, 1.5))}"
    subprocess.run(["sh", "-c", command], check=True)  # as IPython runs ``!cmd``
    pipeline.end(opened, "ok", "", 7, None)

    def ended() -> ChildUsage | None:  # (its exit may be seen a process list after the cell)
        children = mon.cells()[-1].children
        return children[0] if children and not children[0].running else None

    child = until(ended, "the script's end in its cell's record")
    text = scrape(port)
    labels, peak = only(text, "nbgpumon_child_gpu_memory_peak_bytes", cell="7")
    assert peak == GIB and labels["pid"] == str(child.pid) and labels["gpu"] == "0"
    assert only(text, "nbgpumon_child_running", cell="7")[1] == 0.0
    # its SM utilization, the driver's per-process samples' mean (the holder says 60 %)
    assert only(text, "nbgpumon_child_gpu_utilization_ratio", cell="7")[1] == pytest.approx(0.6)


def _child(pid: int, command: str, running: bool = False, rank: int | None = None) -> ChildUsage:
    return ChildUsage(
        pid=pid, command=command, started=time.time(), ended=None if running else time.time(),
        exit_code=None if running else 0, parent=os.getpid(), depth=1,
        gpus=(ChildGpu(0, GIB, True, 0.25, 50.0, 4),), rank=rank,
    )  # fmt: skip


def test_children_are_bounded_to_the_running_and_the_newest_cells_and_commands_stay_text(monitor):
    mon, port = monitor
    ledger = mon._session.ledger

    def cell(n: int, *children: ChildUsage) -> None:
        record = ledger.end(ledger.begin("cell", f"!python step.py {n}", n))
        ledger.add(dataclasses.replace(record, children=children))

    # an old cell's child still runs (a server started early); then more cells than are
    # exported, a child each, the newest with a command full of what a label must escape
    cell(1, _child(10, "python serve.py", running=True))
    for n in range(2, CELLS + 8):
        cell(n, _child(100 + n, f"python step.py {n}"))
    bad = 'python -c "print(1)\\n" \\ <b>&</b>\n--next ' + "x" * 300
    cell(CELLS + 8, _child(99, bad))
    text = scrape(port)
    exported = {labels["cell"] for labels, _ in samples(text, "nbgpumon_child_running")}
    newest = {str(n) for n in range(9, CELLS + 9)}  # the newest CELLS cells
    assert exported == {"1", *newest}  # and the running child, however old its cell
    assert only(text, "nbgpumon_child_running", pid="10")[1] == 1.0
    assert len(samples(text, "nbgpumon_child_gpu_memory_peak_bytes")) == CELLS + 1
    # a command is one line of at most COMMAND_CHARS, its quotes and backslashes as they were
    labels, _ = only(text, "nbgpumon_child_running", pid="99")
    command = labels["command"]
    assert len(command) == COMMAND_CHARS and command.endswith("…")
    assert command.startswith('python -c "print(1)\\n" \\ <b>&</b> --next xxx')

    # cells with many children each: MAX_CHILDREN series at most, the newest cells' first
    first = CELLS + 9
    for n in range(first, first + MAX_CHILDREN // 5 + 2):
        cell(n, *(_child(1000 * n + k, f"torchrun train.py {n}", rank=k) for k in range(5)))
    text = scrape(port)
    running = samples(text, "nbgpumon_child_running")
    assert len(running) == MAX_CHILDREN
    assert len(samples(text, "nbgpumon_child_gpu_memory_peak_bytes")) == MAX_CHILDREN
    assert only(text, "nbgpumon_child_running", pid="10")[1] == 1.0  # running: always there
    assert str(first) not in {labels["cell"] for labels, _ in running}  # the oldest cut
    assert only(text, "nbgpumon_child_running", pid=str(1000 * (first + 3) + 2))[0]["rank"] == "2"
    assert "NaN" not in text
