"""The live widget in a real JupyterLab 4 and Notebook 7: it moves while a long cell runs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"


def _points(widget) -> int:
    return int(widget.get_attribute("data-points") or 0)


def _hover_band(page, panel) -> dict:
    """Sweep the mouse across ``panel``'s plot until a cell band's tip shows: its cell id and
    text (empty when no band was found)."""
    panel.scroll_into_view_if_needed()
    box = panel.locator(".u-over").bounding_box()
    tip = panel.locator(".nbgpumon-tip")
    for k in range(1, 60):
        page.mouse.move(box["x"] + box["width"] * k / 60, box["y"] + box["height"] / 2)
        if tip.is_visible():
            return {"cell": tip.get_attribute("data-tip-cell"), "text": tip.text_content()}
    return {}


def test_the_chart_updates_during_a_long_cell_and_records_it_after(page, open_notebook):
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            "%gpumon",
            "import time\ntime.sleep(5)",
            f"x = 1  # {XSS}",
        ]
    )
    nb.run_cell(0)
    nb.run_cell(1)
    widget = nb.in_output(1, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)

    before = nb.execution_count(2)
    nb.prompt(2).click()
    page.keyboard.press("Control+Enter")  # don't wait: watch the chart while it runs
    seen = []
    for _ in range(7):
        page.wait_for_timeout(500)
        seen.append(_points(widget))
    assert nb.execution_count(2) is None, "the long cell should still be running"
    nb.screenshot(f"widget_during_long_cell_{nb.server.kind}")
    assert seen == sorted(seen) and len(set(seen)) >= 4, seen  # it moved, at least 4 times

    count = nb.wait_for_execution(2, before)
    row = nb.in_output(1, f'.nbgpumon-table tr[data-cell="{count}"][data-kind="cell"]')
    row.wait_for(state="attached", timeout=15_000)
    assert "import time" in row.text_content()  # the first line of the long cell
    row.click()
    assert "selected" in (row.get_attribute("class") or "")
    first_panel = nb.in_output(1, '[data-panel$="-memory"], [data-panel="host-rss"]').first
    tip = _hover_band(page, first_panel)
    assert tip.get("cell") and tip["text"].startswith(f"[{tip['cell']}]"), tip
    nb.screenshot(f"widget_hover_{nb.server.kind}")

    xss_count = nb.run_cell(3)
    xss_row = nb.in_output(1, f'.nbgpumon-table tr[data-cell="{xss_count}"][data-kind="cell"]')
    xss_row.wait_for(state="attached", timeout=15_000)
    assert XSS in xss_row.text_content()  # shown literally, as text
    assert nb.in_output(1, "img").count() == 0
    page.wait_for_timeout(500)  # an <img> would have failed to load and alerted by now
    nb.screenshot(f"widget_after_cells_{nb.server.kind}")
    page.record.assert_clean()
