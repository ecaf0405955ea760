"""The bqplot report of the live session in a real JupyterLab 4 and Notebook 7: it draws, and
brushing the timeline with the mouse lists the cells that ran there."""

from __future__ import annotations

import re

import pytest

from notebook_page import requests_for_xss

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"
TALL = {"width": 1280, "height": 2000}  # the whole report on screen, for the screenshot


def _time_labels(figure) -> list[str]:
    """The tick labels of ``figure`` that are clock times ("22:13:20")."""
    texts = figure.locator(".axis .tick text").all_text_contents()
    return [t for t in texts if re.fullmatch(r"\d\d:\d\d(:\d\d)?(\.\d+)?", t)]


def _tick_labels(figure) -> list[str]:
    """The labels of ``figure``'s first axis (bqplot draws its axes in order: x, then y)."""
    return figure.locator(".axis").first.locator(".tick text").all_text_contents()


def _drag(page, box: dict, start: float, end: float) -> None:
    """Press, move and release the mouse across ``box`` from fraction ``start`` of its width to
    ``end``, at mid-height: a brush on a bqplot figure."""
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    for k in range(1, 11):
        page.mouse.move(box["x"] + box["width"] * (start + (end - start) * k / 10), y)
    page.mouse.up()


def test_the_report_draws_the_session_and_brushing_lists_its_cells(page, open_notebook):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    page.set_viewport_size(TALL)
    xss_requests = requests_for_xss(page)
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            "import numpy as np, time\nkeep = np.ones(2**24)\ntime.sleep(1)",
            f"x = 1  # {XSS}\ntime.sleep(0.5)",
            f"import nbgpumon\nnbgpumon.mark({XSS!r})\ntime.sleep(0.5)",
            "from nbgpumon._views.report.bqplot_report import report_widget\n"
            "import nbgpumon\n"
            "report_widget(nbgpumon.monitor().data)",
        ]
    )
    counts = [nb.run_cell(i) for i in range(5)]
    cells = counts[1:4]  # what the ledger holds (the %load_ext cell started it)
    report = nb.in_output(4, ".nbgpumon-report").first
    report.wait_for(state="visible", timeout=30_000)
    expect(report.locator(".nbgpumon-report-title")).to_contain_text(f"{len(cells)} cells")

    # no GPU here: the memory timeline (host RSS) and the two per-cell figures
    figures = report.locator(".bqplot.figure")
    expect(figures).to_have_count(3, timeout=30_000)
    memory, per_cell, durations = figures.all()
    expect(memory.locator(".mainheading")).to_have_text("Memory")
    expect(per_cell.locator(".mainheading")).to_have_text(re.compile(r"^Per cell: memory"))

    def longest_line() -> int:
        paths = [p.get_attribute("d") or "" for p in memory.locator(".curve .line").all()]
        return max((len(re.findall(r"L", d)) for d in paths), default=0)

    nb.wait_until(lambda: longest_line() >= 10, timeout=15_000, what="the host RSS line")
    # the cells' [N] and the mark's label, as SVG text
    expect(memory.locator("text.label")).to_have_text([f"[{n}]" for n in cells] + [XSS])
    expect(per_cell.locator("rect.bar")).to_have_count(2 * len(cells))  # peak and kept
    expect(durations.locator("rect.bar")).to_have_count(len(cells))
    names = [f"[{n}]" for n in cells]
    nb.wait_until(lambda: _tick_labels(per_cell) == names, what="the bars' cell names")

    # brush across nearly all of the timeline: every cell, and the mark, are listed
    _drag(page, memory.locator("rect.plotarea_events").bounding_box(), 0.01, 0.99)
    rows = report.locator("table.nbgpumon-report-cells tbody tr")
    expect(rows).to_have_count(len(cells), timeout=15_000)
    assert [int(r.get_attribute("data-cell")) for r in rows.all()] == cells
    expect(rows.nth(1)).to_contain_text(XSS)  # shown literally, as text
    expect(report.locator("li").first).to_contain_text(XSS)
    expect(report.locator("img")).to_have_count(0)
    assert xss_requests == []
    nb.screenshot(f"report_widget_{nb.server.kind}")

    # zooming to the brushed range and back, through Python, moves the browser's time axis
    def first_tick() -> float:
        """Where the first time tick sits, px (its label can stay the same after a small zoom)."""
        transform = memory.locator(".axis .tick").first.get_attribute("transform") or ""
        return float(re.match(r"translate\(([-\d.e]+)", transform).group(1))

    before = first_tick()
    report.locator("button", has_text="zoom to selection").click()
    nb.wait_until(lambda: abs(first_tick() - before) > 1, timeout=15_000, what="the zoom")
    report.locator("button", has_text="reset zoom").click()
    nb.wait_until(lambda: abs(first_tick() - before) < 0.01, timeout=15_000, what="the reset")
    page.record.assert_clean()


RECORDED_GPU_SESSION = """\
import numpy as np
from pathlib import Path
from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._views.report.bqplot_report import report_widget
from nbgpumon._api.recorded import Recorded

GIB = 2**30
t = 1.7e9 + np.arange(200) * 0.1
grow = np.arange(200) * 2**22
columns = ["gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util",
           "gpu0.torch.allocated", "gpu0.torch.reserved"]
values = np.column_stack([3 * GIB + grow, np.full(200, 141 * GIB), np.full(200, 42.0),
                          np.full(200, 17.0), grow, grow + GIB // 2])

def cell(i, n, label):
    usage = DeviceUsage(0, 0, "H200", 0, GIB, 0, GIB, 0, GIB, 2 * GIB, True, 2 * GIB, 40.0, 90.0)
    return CellRecord(i, "cell", n, None, label, float(t[0]) + 10 * i, 9.0, "ok", "", (usage,),
                      None, None, None, False)

session = Recorded(Path("run.sqlite"), 1, float(t[0]), "host",
                   [{"index": 0, "name": "H200", "memory_total": 141 * GIB}], "", {}, columns,
                   t, values, [cell(0, 1, "warm-up"), cell(1, 2, "train()")], [])
report_widget(session)"""


def test_a_recorded_gpu_session_shows_memory_and_utilization(page, open_notebook):
    from playwright.sync_api import expect

    # A recording's data, built by hand: GPU figures render without a GPU (or a fake NVML).
    page.set_viewport_size(TALL)
    nb = open_notebook([RECORDED_GPU_SESSION])
    nb.run_cell(0)
    report = nb.in_output(0, ".nbgpumon-report").first
    report.wait_for(state="visible", timeout=30_000)
    expect(report).to_contain_text("1 GPU: gpu0 H200, 141 GiB")
    figures = report.locator(".bqplot.figure")
    expect(figures).to_have_count(4, timeout=30_000)
    memory, util, per_cell, _ = figures.all()
    expect(util.locator(".mainheading")).to_have_text("Utilization")
    expect(memory.locator("text.label")).to_have_text(["[1]", "[2]"])
    expect(util.locator("text.label")).to_have_text(["[1]", "[2]"])
    expect(per_cell.locator("rect.bar")).to_have_count(4)  # peak and kept for two cells
    # 19.9 s of samples: a tick every 5 s, whole seconds, not a label each second
    expected = ["22:13:20", "22:13:25", "22:13:30", "22:13:35"]
    for figure in (memory, util):
        nb.wait_until(
            lambda f=figure: _time_labels(f) == expected,
            timeout=15_000,
            what=f"the time ticks {expected}",
        )
    legend = report.locator(".nbgpumon-report-legend")

    def key() -> str:
        return " ".join((legend.text_content() or "").split())

    nb.wait_until(lambda: key().startswith("memory used (NVML)"), what="the legend")
    assert "allocated (torch)" in key(), key()
    nb.screenshot(f"report_widget_gpu_{nb.server.kind}")
    page.record.assert_clean()
