"""The HTML report of a recording opens in Chromium with the network off and shows the chart."""

from __future__ import annotations

import subprocess
import sys

import pytest

from notebook_page import open_offline
from notebook_runner import run_cells

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
