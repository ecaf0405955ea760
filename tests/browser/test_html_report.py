"""The HTML report of a recording opens in Chromium with the network off and shows the chart."""

from __future__ import annotations

import datetime as dt
import itertools
import re
import subprocess
import sys

import pytest

from nbgpumon._views.chart.axis import TIME_STEPS

from notebook_page import ARTIFACTS, open_offline
from notebook_runner import run_cells
from svg_checks import assert_within_the_picture, inside, round_ticks

pytestmark = pytest.mark.browser


def test_the_html_report_opens_offline_and_shows_the_chart_and_the_cells(page, tmp_path):
    path = tmp_path / "run.sqlite"
    run_cells(
        [
            "%load_ext nbgpumon",
            f"%gpumon record {path}",
            "import numpy as np, time\nkeep = np.ones(2**24)\ntime.sleep(1)",
            "x = 1  # <img src=x onerror=alert(1)>",
            "%gpumon record off",
        ]
    )
    report = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(path), "-o", str(report)], check=True
    )
    requested = open_offline(page, report)
    svg = page.locator(".timeline svg")
    svg.wait_for(state="visible")
    box = svg.bounding_box()
    assert box["width"] > 500 and box["height"] > 100
    assert page.locator("svg polyline").count() >= 1  # the host RSS line was drawn
    rows = page.locator("table.nbgpumon-cells tbody tr")
    assert rows.count() == 3  # the cells that ended while recording
    assert "x = 1  # <img src=x onerror=alert(1)>" in rows.first.text_content()
    assert page.locator("img").count() == 0
    assert requested == [report.as_uri()]  # nothing but the page itself
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    page.record.assert_clean()


# -- the chart drawn as carefully as the live one --------------------------------------------
BEFORE = "before = 'this cell ran before the recording started'"
MARK = "<b>x</b>"
# samples(n) waits for n more samples (a condition with a deadline, not a sleep): the rise of
# memory it brackets is in the recording however slowly the machine samples
WAIT_FOR_SAMPLES = (
    "import time, nbgpumon\n"
    "def samples(n):\n"
    "    mon, until = nbgpumon.monitor(), time.monotonic() + 30\n"
    "    enough = mon.data.cursor + n\n"
    "    while mon.data.cursor < enough and time.monotonic() < until:\n"
    "        time.sleep(0.02)"
)


@pytest.fixture(scope="module")
def marked_report(tmp_path_factory):
    """A recording from a real kernel: a cell before it started, then host memory that rises
    by 256 MiB between samples, a mark whose label looks like markup, and a quiet cell; and
    its page."""
    tmp = tmp_path_factory.mktemp("html-report")
    path, report = tmp / "run.sqlite", tmp / "report.html"
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            BEFORE,
            f"%gpumon record {path}",
            WAIT_FOR_SAMPLES,
            "import numpy as np\nsamples(5)\nkeep = np.ones(2**25)\nsamples(20)",
            f"nbgpumon.mark({MARK!r})\nsamples(20)",
            "x = 1",
            "%gpumon record off",
        ]
    )
    failed = [r for r in runs if r.error]
    assert not failed, [(r.source, r.text) for r in failed]
    subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(path), "-o", str(report)], check=True
    )
    return report


def _opened(page, report):
    open_offline(page, report)
    svg = page.locator(".timeline svg")
    svg.wait_for(state="visible")
    return svg


def test_the_time_axis_is_labelled_in_increasing_clock_times_with_its_unit(page, marked_report):
    svg = _opened(page, marked_report)
    labels = svg.locator("text.xtick")
    texts = labels.all_text_contents()
    assert len(texts) >= 3, texts  # 45 samples or more: 4.5 s at least, in whole seconds
    moments = [dt.datetime.strptime(t, "%H:%M:%S") for t in texts]
    assert moments == sorted(moments) and len(set(moments)) == len(moments), texts
    steps = {(b - a).total_seconds() for a, b in itertools.pairwise(moments)}
    assert len(steps) == 1 and steps.pop() in TIME_STEPS, texts  # one round step
    xs = [label.bounding_box()["x"] for label in labels.all()]
    assert xs == sorted(xs)  # left to right, as the times go
    assert svg.locator("text.xtitle").text_content() == "time (UTC)"


def test_y_ticks_are_round_numbers_in_the_unit_the_table_uses(page, marked_report):
    svg = _opened(page, marked_report)
    panel = svg.locator("g.panel").first  # no GPU here: the kernel's resident memory
    title = panel.locator("text").first.text_content()
    unit = re.fullmatch(r"host: this kernel's resident memory \((\w+)\)", title).group(1)
    peaks = page.locator("table.nbgpumon-cells tbody tr td:nth-child(5)").all_text_contents()
    header = page.locator("table.nbgpumon-cells thead th:nth-child(5)").text_content()
    assert header == "host peak"
    # the kernel holds a few hundred MiB: the table says MiB, and so does the axis
    assert {p.split()[-1] for p in peaks} == {unit} == {"MiB"}, (peaks, unit)
    ticks = [float(t) for t in panel.locator("text.ytick").all_text_contents()]
    assert len(ticks) >= 3 and round_ticks(ticks), ticks
    biggest = max(float(p.lstrip("≥").split()[0]) for p in peaks)
    assert ticks[-1] >= biggest * 0.9, (ticks, peaks)  # the ticks reach the data


def test_the_peak_is_drawn_below_the_top_of_the_plot_area(page, marked_report):
    svg = _opened(page, marked_report)
    panel = svg.locator("g.panel").first
    plot = panel.locator("rect.plot").bounding_box()
    line = panel.locator("polyline").first.bounding_box()
    assert inside(line, plot), (line, plot)
    assert line["y"] >= plot["y"] + 0.05 * plot["height"], (line, plot)  # headroom
    assert line["height"] >= 0.3 * plot["height"], (line, plot)  # the 256 MiB rise shows


def test_a_mark_is_drawn_as_a_line_with_its_label_as_text(page, marked_report):
    svg = _opened(page, marked_report)
    label = svg.locator("text.mark-label")
    assert label.count() == 1
    assert label.text_content() == MARK  # shown literally, not bold
    assert page.locator("b").count() == 0
    line = svg.locator("g.panel line.mark")
    assert line.count() == 1
    drawn, plot = line.bounding_box(), svg.locator("rect.plot").first.bounding_box()
    assert inside(drawn, plot) and drawn["height"] >= plot["height"] - 1
    where = label.bounding_box()
    assert abs(where["x"] + where["width"] / 2 - drawn["x"] - drawn["width"] / 2) < 2  # over it
    assert where["y"] + where["height"] <= plot["y"]  # above the plot, clear of the bands
    # the mark was made in cell [6], the fourth band: its line is inside it
    band = svg.locator("rect.band").nth(3).bounding_box()
    middle = drawn["x"] + drawn["width"] / 2  # the line's, less its stroke
    assert band["x"] <= middle <= band["x"] + band["width"], (band, drawn)
    assert page.locator("ul.marks li").text_content().endswith(" " + MARK)


def test_only_the_recordings_own_cells_are_listed_and_banded(page, marked_report):
    svg = _opened(page, marked_report)
    sources = page.locator("table.nbgpumon-cells tbody tr").all_text_contents()
    assert not any(BEFORE in s for s in sources), sources
    # [3], the %gpumon record cell, began before the recording and ended in it: its own,
    # banded from the recording's start, the left edge
    names = page.locator("table.nbgpumon-cells tbody tr td:first-child").all_text_contents()
    assert names == ["[7]", "[6]", "[5]", "[4]", "[3]"], sources
    bands = svg.locator("rect.band")
    assert bands.count() == 5
    plot = svg.locator("rect.plot").first.bounding_box()
    assert abs(bands.first.bounding_box()["x"] - plot["x"]) < 1
    labels = svg.locator("text.band-label").all_text_contents()
    assert {"[5]", "[6]"} <= set(labels) <= {"[3]", "[4]", "[5]", "[6]", "[7]"}, labels
    facts = page.locator("dl").text_content()
    assert (
        "5 cells; 1 earlier cell of the kernel, from before the recording started, left out"
        in facts
    ), facts


def test_nothing_in_the_picture_reaches_past_its_edges(page, marked_report):
    assert_within_the_picture(_opened(page, marked_report))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_page.png"), full_page=True)
    page.record.assert_clean()
