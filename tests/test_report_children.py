"""The processes a cell started, in the reports: the bqplot report's listing and memory panel,
and the recorded session's HTML page. A live monitor on the fake NVML (tests/fake_nvml) whose
cell starts a real child that says what GPU memory it holds (tests/children/holder.py); and a
synthetic recording for what a label from user data becomes."""

from __future__ import annotations

import html
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import nbgpumon
from nbgpumon import GPUMon, Monitor
from nbgpumon._api.recorded import Recorded
from nbgpumon._foundation.metrics import metric
from nbgpumon._ledger.records import CellRecord
from nbgpumon._sources.processes.children import ChildGpu, ChildUsage
from nbgpumon._views.report.bqplot_report import Report, report_widget
from nbgpumon._views.words.children import children_text

from child_python import python
from notebook_runner import fake_pynvml
from waiting import until

GIB, MIB = 2**30, 2**20
HOLDER = Path(__file__).parent / "children" / "holder.py"
DEADLINE = 30  # seconds any awaited condition gets
XSS = "<img src=x onerror=alert(1)>"
T0 = 1_700_000_000.0
SPLIT = ("kernel_mem", "children_mem", "others_mem")  # the process split's metrics, in order


def brush_all(report: Report) -> None:
    """Brush the whole session (what the browser sends: datetime64[ms])."""
    lo, hi = report.data.span
    ms = [np.datetime64(round(t * 1000), "ms") for t in (lo - 1, hi + 1)]
    report.brushes[0].selected = np.array(ms)


def row_of(report: Report, count: int) -> str:
    """The listing's row of cell ``count``, as HTML."""
    listing = report.listing.value
    start = listing.index(f"<tr data-cell='{count}'")
    return listing[start : listing.index("</tr>", start)]


@pytest.fixture
def monitor(tmp_path: Path, monkeypatch) -> Iterator[Monitor]:
    """A sampling monitor on one fake GPU listing this process and its children that hold
    memory; it records to ``tmp_path/run.sqlite``."""
    use = tmp_path / "gpu-use"
    use.mkdir()
    monkeypatch.setenv("GPU_USE", str(use))
    nvml = fake_pynvml(
        devices=[{"name": "Fake H200", "uuid": "GPU-aaaa", "used": 4 * GIB, "total": 141 * GIB}],
        processes=[{"pid": "self", "used": 8 * MIB}, {"pid": "descendants", "used_from": str(use)}],
    )
    mon = Monitor(GPUMon(interval=0.05, process_interval=0.05), nvml_module=nvml)
    try:
        mon.start()
        mon.record(tmp_path / "run.sqlite")
        yield mon
    finally:
        mon.close()


def run_child_cell(mon: Monitor, count: int, used: int, sm: int) -> ChildUsage:
    """A cell that runs a holder to its end (as ``!python holder.py`` does); its child as the
    cell's record says once the child's end is seen."""
    pipeline = mon._session.cells_pipeline
    opened = pipeline.begin(count, "!python holder.py")
    subprocess.run([python(), str(HOLDER), str(used), str(sm), "1.5"], check=True)
    pipeline.end(opened, "ok", "", count, None)

    def ended() -> ChildUsage | None:
        (record,) = [r for r in mon.cells() if r.execution_count == count]
        kids = record.children
        return kids[0] if kids and not kids[0].running else None

    return until(ended, "the child's end in its cell's record")


def test_a_live_report_lists_a_cell_with_the_processes_it_started(monitor):
    child = run_child_cell(monitor, 4, 3 * GIB, 87)
    quiet = monitor._session.cells_pipeline
    quiet.end(quiet.begin(5, "x = 1"), "ok", "", 5, None)  # a cell that started none
    report = report_widget(monitor.data)
    brush_all(report)
    row = row_of(report, 4)
    words = children_text((child,))
    assert words.startswith("python ") and "holder.py" in words
    assert "≥3.0 GiB on gpu0, 87%" in words  # sampled peak, the GPU, its mean SM utilization
    assert f"<td>{html.escape(words)}</td>" in row
    assert "<th>children</th>" in report.listing.value
    assert "holder.py" not in row_of(report, 5)

    # the memory panel: the GPU's split drawn with the registry's labels and colours
    labels = [line.labels[0] for line in report.memory_lines]
    assert labels[:4] == ["used (NVML)", "this kernel", "its children", "other processes"]
    colors = [line.colors[0] for line in report.memory_lines[1:4]]
    assert colors == [metric("procs", name).color for name in SPLIT]
    children = report.memory_lines[2]
    assert np.nanmax(children.y) == pytest.approx(3.0)  # GiB: the child's while it ran
    for label in ("this kernel", "its children", "other processes"):
        assert label in report.legend.value


def test_the_recorded_page_names_the_processes_each_cell_started(monitor, tmp_path):
    child = run_child_cell(monitor, 3, GIB, 40)
    monitor.close()
    page = nbgpumon.load(tmp_path / "run.sqlite").report_html()
    words = children_text((child,))
    assert "<h2>Processes the cells started</h2>" in page
    assert f"<li data-cell='3'>{html.escape(f'[3] children: {words}')}</li>" in page
    assert "1.0 GiB on gpu0, 40%" in words


def _recording(children: tuple[ChildUsage, ...]) -> Recorded:
    columns = ["gpu0.nvml.mem_used", "gpu0.nvml.mem_total"]
    columns += [metric("procs", name).column(0) for name in SPLIT]
    times = T0 + np.arange(100) / 10
    values = np.tile([4.0 * GIB, 141.0 * GIB, 8.0 * MIB, 3.0 * GIB, GIB], (100, 1))
    cell = CellRecord(
        index=0, kind="cell", execution_count=2, cell_id=None, label="!python x.py",
        start=T0 + 1, duration=5, status="ok", error="", devices=(), rss_before=GIB,
        rss_after=GIB, rss_peak=GIB, rss_peak_exact=True, children=children,
    )  # fmt: skip
    return Recorded(
        path=Path("/tmp/synthetic.sqlite"), session_id=1, started=T0, host="test",
        gpus=[{"index": 0, "name": "Fake H200", "memory_total": 141 * GIB}], driver="580",
        versions={}, columns=columns, times=times, values=values, records=[cell], marks=[],
    )  # fmt: skip


def test_a_command_from_user_data_is_text_in_the_listing_and_the_page():
    child = ChildUsage(
        pid=42, command=f"python {XSS}.py", started=T0 + 2, ended=T0 + 4, exit_code=1,
        parent=os.getpid(), depth=1, gpus=(ChildGpu(0, 2 * GIB, True, 0.25),),
    )  # fmt: skip
    session = _recording((child,))
    report = report_widget(session)
    brush_all(report)
    row = row_of(report, 2)
    assert html.escape(children_text((child,))) in row and "exit 1" in row
    assert "<img" not in report.listing.value
    page = session.report_html()
    assert html.escape(XSS) in page and XSS not in page
    # a recording's split: the three lines, named as a legend says them
    labels = [line.labels[0] for line in report.memory_lines]
    assert labels == ["used (NVML)", "this kernel", "its children", "other processes"]
