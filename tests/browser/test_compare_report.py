"""Two runs compared, in the browser: ``Comparison.report()`` (bqplot) in a real JupyterLab 4
and Notebook 7, and ``Comparison.report_html()`` opened offline in Chromium. Both runs come from
kernels of their own (tests/test_compare.py's notebook: run B keeps three times run A's host
memory in one cell and adds a cell), each with a cell source holding an ``<img onerror>``."""

from __future__ import annotations

import itertools
import re

import pytest

from compare_runs import EXTRA, KEEP_A, KEEP_B, SAMPLED, THREE_TIMES_KEPT
from notebook_page import ARTIFACTS, open_offline, requests_for_xss
from notebook_runner import run_cells
from svg_checks import assert_within_the_picture, inside, round_ticks

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"
XSS_CELL = f"x = 1  # {XSS}"  # under the table's 40 characters of source: shown whole
KEEP_B_SHOWN = KEEP_B[:39]  # the table shows a source's first 39 characters, then "…"
RUN_COLORS = {"A": "#4c78a8", "B": "#f58518"}  # _views/palette.py's RUN_COLORS
REGRESSION_BAND = "#f4a6a3"  # _views/palette.py's REPORT_REGRESSION_BAND
REGRESSION_ROW = "rgb(253, 226, 225)"  # the table's REGRESSION_ROW, #fde2e1
ROWS = 7  # A's 6 recorded cells (from %gpumon record to SAMPLED), and B's extra cell
BANDS = ["[2]", "[3]", "[4]", "— → [5]", "[5] → [6]", "[6] → [7]", "[7] → [8]"]
TALL = {"width": 1280, "height": 1400}  # the whole report on screen, for the screenshot


def _run(path, keep: str, extra: list[str]) -> None:
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            f"%gpumon record {path}",
            "import numpy as np",
            keep,
            *extra,
            XSS_CELL,
            "total = sum(range(10_000))",
            SAMPLED,
            "%gpumon record off",
        ]
    )
    failed = [r for r in runs if r.error]
    assert not failed, [(r.source, r.text) for r in failed]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run A, then run B, each recorded in a kernel of its own, before any page opens."""
    tmp = tmp_path_factory.mktemp("compare-browser")
    a, b = tmp / "a.sqlite", tmp / "b.sqlite"
    _run(a, KEEP_A, [])
    _run(b, KEEP_B, [EXTRA])
    return a, b


def _points(d: str) -> int:
    """How many points an SVG path's ``d`` draws (its M and L commands)."""
    return len(re.findall(r"[ML]", d))


def test_the_report_widget_draws_both_runs_aligned_and_the_table(page, open_notebook, two_runs):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    a, b = two_runs
    page.set_viewport_size(TALL)
    xss_requests = requests_for_xss(page)
    nb = open_notebook([f"import nbgpumon\nnbgpumon.compare({str(a)!r}, {str(b)!r}).report()"])
    nb.run_cell(0)
    report = nb.in_output(0, ".nbgpumon-compare-report").first
    report.wait_for(state="visible", timeout=30_000)
    expect(report).to_contain_text(str(a))
    expect(report).to_contain_text(str(b))

    # no GPU here: one figure, host RSS, both runs' lines in it
    figures = report.locator(".bqplot.figure")
    expect(figures).to_have_count(1, timeout=30_000)
    figure = figures.first
    expect(figure.locator(".mainheading")).to_have_text("host RSS, aligned by cell")
    box = figure.bounding_box()
    assert box["width"] > 500 and box["height"] > 200, box

    def run_lines() -> dict[str, str] | None:
        """Each run's line ``d``, by run, once both have several points."""
        found = {}
        for line in figure.locator(".curve .line").all():
            style = (line.get_attribute("style") or "").lower()
            for run, color in RUN_COLORS.items():
                if color in style or _rgb(color) in style.replace(" ", ""):
                    found[run] = line.get_attribute("d") or ""
        if set(found) == {"A", "B"} and all(_points(d) >= 3 for d in found.values()):
            return found
        return None

    lines = nb.wait_until(run_lines, timeout=15_000, what="run A's and run B's lines")
    assert lines["A"] != lines["B"]
    assert all("NaN" not in d for d in lines.values()), lines

    # the cell bands: the regression's span is drawn in its tint, the labels are SVG text
    def regression_band() -> str:
        for curve in figure.locator(".curve .area").all():
            style = (curve.get_attribute("style") or "").lower().replace(" ", "")
            if REGRESSION_BAND in style or _rgb(REGRESSION_BAND) in style:
                return curve.get_attribute("d") or ""
        return ""

    nb.wait_until(lambda: _points(regression_band()) >= 3, what="the regression's band")
    labels = figure.locator("text.label")
    # the labels of the bands wide enough to hold them, as SVG text: the regression's and the
    # sampling cell's at least (the longest two); the 1 ms cells' not, nor labels on each other
    expect(labels.filter(has_text=re.compile(r"^\[4\]$"))).to_have_count(1, timeout=15_000)
    texts = labels.all_text_contents()
    assert "[7] → [8]" in texts and "[3]" not in texts and "[5] → [6]" not in texts, texts
    assert texts == [t for t in BANDS if t in texts], texts  # in the cells' order
    assert labels.first.evaluate("e => e instanceof SVGTextElement")
    boxes = [label.bounding_box() for label in labels.all()]
    for left, right in itertools.pairwise(boxes):
        assert left["x"] + left["width"] <= right["x"], (texts, boxes)

    # the table: the regression's row, tinted; the <img> source as text
    table = report.locator(".nbgpumon-compare table")
    expect(table).to_be_visible()
    regression = table.locator("tbody tr", has_text=KEEP_B_SHOWN)
    expect(regression).to_have_count(1)
    expect(regression).to_contain_text("regression")
    expect(regression).to_contain_text(re.compile(THREE_TIMES_KEPT))
    expect(regression).to_have_css("background-color", REGRESSION_ROW)
    others = table.locator("tbody tr", has_not_text=KEEP_B_SHOWN)
    expect(others).to_have_count(ROWS - 1)
    assert all(
        bg != REGRESSION_ROW
        for bg in others.evaluate_all("rows => rows.map(r => getComputedStyle(r).backgroundColor)")
    )
    expect(table.locator("tbody tr", has_text=EXTRA)).to_contain_text("only in B")
    expect(table.locator("tbody tr", has_text=XSS_CELL)).to_have_count(1)
    expect(report.locator("img")).to_have_count(0)
    assert xss_requests == []
    report.scroll_into_view_if_needed()
    nb.screenshot(f"compare_report_{nb.server.kind}")
    report.screenshot(path=str(ARTIFACTS / f"compare_report_widget_{nb.server.kind}.png"))
    page.record.assert_clean()


def _rgb(color: str) -> str:
    """A colour, "#4c78a8", as the browser's computed "rgb(76,120,168)" (spaces removed)."""
    r, g, b = (int(color[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgb({r},{g},{b})"


def test_the_comparison_page_opens_offline_and_shows_both_runs(page, two_runs, tmp_path):
    import nbgpumon

    a, b = two_runs
    path = tmp_path / "compare.html"
    path.write_text(nbgpumon.compare(a, b).report_html(), encoding="utf-8")
    requested = open_offline(page, path)
    svg = page.locator(".timeline svg")
    svg.wait_for(state="visible")
    box = svg.bounding_box()
    assert box["width"] > 900 and box["height"] > 150, box
    polylines = page.locator(".timeline svg polyline")
    assert polylines.count() == 2  # host RSS, A and B (no GPU here)
    strokes = [p.get_attribute("stroke") for p in polylines.all()]
    assert strokes == [RUN_COLORS["A"], RUN_COLORS["B"]]
    for line in polylines.all():
        points = (line.get_attribute("points") or "").split()
        assert len(points) >= 3, points
        drawn = line.bounding_box()
        assert drawn["width"] > 100, drawn  # across the chart, not a dot
    assert page.locator(".timeline svg rect[fill='#e45756']").count() == 1  # the regression
    rows = page.locator("table tbody tr")
    assert rows.count() == ROWS
    regression = page.locator("table tbody tr", has_text=KEEP_B_SHOWN)
    assert regression.count() == 1
    assert re.search(THREE_TIMES_KEPT, regression.text_content())
    assert regression.evaluate("r => getComputedStyle(r).backgroundColor") == REGRESSION_ROW
    xss_row = page.locator("table tbody tr", has_text=XSS_CELL)
    assert xss_row.count() == 1  # the <img> text, shown as text
    assert page.locator("img").count() == 0
    assert requested == [path.as_uri()]  # nothing but the page itself
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare_page.png"), full_page=True)
    page.record.assert_clean()


def test_the_comparison_pages_axes_are_labelled_in_round_steps_and_units(page, two_runs, tmp_path):
    import nbgpumon

    a, b = two_runs
    path = tmp_path / "compare.html"
    path.write_text(nbgpumon.compare(a, b).report_html(), encoding="utf-8")
    open_offline(page, path)
    svg = page.locator(".timeline svg")
    svg.wait_for(state="visible")
    panel = svg.locator("g.panel").first
    # host RSS: B keeps 300 MiB, so a few hundred MiB, in MiB as the table says it
    title = panel.locator("text").first.text_content()
    assert title == "host RSS (MiB)", title
    assert "MiB" in page.locator("table tbody").text_content()
    ticks = [float(t) for t in panel.locator("text.ytick").all_text_contents()]
    assert len(ticks) >= 3 and round_ticks(ticks), ticks
    plot = panel.locator("rect.plot").bounding_box()
    for line in panel.locator("polyline").all():
        drawn = line.bounding_box()
        assert inside(drawn, plot, slack=1) and drawn["y"] >= plot["y"] + 0.05 * plot["height"]
    # aligned time, from the first cell's start: round numbers, left to right, with a unit
    labels = panel.locator("text.xtick")
    times = [float(t) for t in labels.all_text_contents()]
    assert len(times) >= 3 and times == sorted(times), times
    steps = {round(b - a, 9) for a, b in itertools.pairwise(times)}
    assert len(steps) == 1 and round_ticks([0.0, steps.pop()]), times
    xs = [label.bounding_box()["x"] for label in labels.all()]
    assert xs == sorted(xs)
    assert re.fullmatch(
        r"time aligned by cell \((s|min|h), from the first cell's start\)",
        svg.locator("text.xtitle").text_content(),
    )
    assert_within_the_picture(svg)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_compare_page.png"), full_page=True)
    page.record.assert_clean()
