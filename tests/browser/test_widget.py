"""The live widget in a real JupyterLab 4 and Notebook 7: it moves while a long cell runs, shows
that cell as it runs, and records it after."""

from __future__ import annotations

import re
import time

import pytest

from notebook_page import ARTIFACTS, requests_for_xss

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"
SELECTED = re.compile(r"\bselected\b")
RUNNING = re.compile(r"\brunning\b")


def _show_the_widget_and_start_cell_2(page, nb):
    """Run cells 0 (load) and 1 (%gpumon), wait for the widget, start cell 2 without waiting
    for it; the widget and cell 2's execution count before."""
    nb.run_cell(0)
    nb.run_cell(1)
    widget = nb.in_output(1, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    before = nb.execution_count(2)
    nb.prompt(2).click()
    page.keyboard.press("Control+Enter")  # don't wait: watch the chart while it runs
    return widget, before


def _points(widget) -> int:
    return int(widget.get_attribute("data-points") or 0)


def _seconds(text: str | None) -> float:
    """A table time ("850 ms", "12.3 s", "2 min 3 s") in seconds."""
    text = text or ""
    if m := re.fullmatch(r"(\d+) ms", text):
        return int(m.group(1)) / 1000
    if m := re.fullmatch(r"([\d.]+) s", text):
        return float(m.group(1))
    if m := re.fullmatch(r"(\d+) min (\d+) s", text):
        return 60 * int(m.group(1)) + int(m.group(2))
    raise AssertionError(f"not a time: {text!r}")


def _tip_seconds(tip) -> float:
    """The time so far in a running cell's tip: "[5] running 3.2 s · host +1.0 MiB"."""
    return _seconds(re.search(r"running (.+?)(?: ·|\n|$)", tip.text_content() or "").group(1))


def _hover_band(nb, panel, deadline_s: float = 15.0) -> dict:
    """Sweep the mouse across ``panel``'s plot, again until ``deadline_s``, until a cell band's
    tip shows: its cell id and text."""
    panel.scroll_into_view_if_needed()
    tip = panel.locator(".nbgpumon-tip")
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        box = panel.locator(".u-over").bounding_box()
        for k in range(1, 60):
            nb.page.mouse.move(box["x"] + box["width"] * k / 60, box["y"] + box["height"] / 2)
            if tip.is_visible():
                return {"cell": tip.get_attribute("data-tip-cell"), "text": tip.text_content()}
    raise AssertionError(f"no band's tip showed over {panel} within {deadline_s:.0f} s")


def _moved(widget, times: int, seen: list[int]):
    """A wait_until predicate: the widget's row count went up ``times`` times (kept in seen)."""

    def check() -> bool:
        n = _points(widget)
        if n != seen[-1]:
            seen.append(n)
        return len(seen) > times

    return check


# the cell table's shown headers, and those of them whose every drawn row says "—"
_SHOWN_AND_ALL_DASHES = """t => {
  const rows = [...t.querySelectorAll("tbody tr[data-key]")];
  const shown = [...t.tHead.rows[0].cells].map((th, j) => [th, j])
    .filter(([th]) => getComputedStyle(th).display !== "none");
  const dashes = ([, j]) => rows.length && rows.every((r) => r.cells[j].textContent === "\u2014");
  return [shown.map(([th]) => th.textContent), shown.filter(dashes).map(([th]) => th.textContent)];
}"""


def test_the_chart_updates_during_a_long_cell_and_records_it_after(page, open_notebook):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    xss_requests = requests_for_xss(page)
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            "%gpumon",
            "import time\ntime.sleep(8)",
            f"x = 1  # {XSS}",
        ]
    )
    widget, before = _show_the_widget_and_start_cell_2(page, nb)
    seen = [_points(widget)]
    nb.wait_until(_moved(widget, 4, seen), timeout=6_000, what=f"4 new row counts, saw {seen}")
    assert nb.execution_count(2) is None, "the long cell should still be running"
    nb.screenshot(f"widget_during_long_cell_{nb.server.kind}")
    assert seen == sorted(seen), seen  # it only grew

    count = nb.wait_for_execution(2, before)
    row = nb.in_output(1, f'.nbgpumon-table tr[data-cell="{count}"][data-kind="cell"]')
    expect(row).to_have_count(1, timeout=15_000)
    expect(row).not_to_have_class(RUNNING)  # its ledger row, not the live one
    expect(row).to_contain_text("import time")  # the first line of the long cell
    row.click()
    expect(row).to_have_class(SELECTED)
    first_panel = nb.in_output(1, '[data-panel$="-memory"], [data-panel="host-rss"]').first
    tip = _hover_band(nb, first_panel)
    assert tip.get("cell") and tip["text"].startswith(f"[{tip['cell']}]"), tip
    nb.screenshot(f"widget_hover_{nb.server.kind}")

    xss_count = nb.run_cell(3)
    xss_row = nb.in_output(1, f'.nbgpumon-table tr[data-cell="{xss_count}"][data-kind="cell"]')
    expect(xss_row).to_contain_text(XSS, timeout=15_000)  # shown literally, as text
    expect(nb.in_output(1, "img")).to_have_count(0)
    assert xss_requests == []
    # as `%gpumon cells`: no column shown whose every row is "—" (here, no GPU: no GPU columns)
    shown, dashes = nb.in_output(1, ".nbgpumon-table").first.evaluate(_SHOWN_AND_ALL_DASHES)
    assert {"cell", "status", "time", "source"} <= set(shown) and dashes == [], (shown, dashes)
    # every sample arrived as the sampler sent it: nothing was missed and asked for again
    expect(nb.in_output(1, ".nbgpumon-note")).to_be_hidden()
    nb.screenshot(f"widget_after_cells_{nb.server.kind}")
    page.record.assert_clean()


def test_the_running_cell_is_an_open_band_and_a_first_row_whose_time_grows(page, open_notebook):
    from playwright.sync_api import expect

    xss_requests = requests_for_xss(page)
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            "%gpumon",
            f"import time  # {XSS}\ntime.sleep(120)",  # interrupted once it has been seen
        ]
    )
    _, before = _show_the_widget_and_start_cell_2(page, nb)
    running = nb.in_output(1, ".nbgpumon-table tbody tr.running")
    expect(running).to_have_count(1, timeout=15_000)
    expect(nb.in_output(1, ".nbgpumon-table tbody tr").first).to_have_class(RUNNING)
    expect(running.locator("td.status")).to_have_text("running")
    expect(running.locator("td.source")).to_have_text(f"import time  # {XSS}")  # as text
    name = running.locator("td.cell").text_content()
    assert re.fullmatch(r"\[\d+\]", name or ""), name
    elapsed = running.locator("td.num").first
    start = _seconds(elapsed.text_content())
    nb.wait_until(
        lambda: _seconds(elapsed.text_content()) >= start + 1.5,
        timeout=10_000,
        what=f"the running time to grow past {start + 1.5} s",
    )

    # the open band runs to the right edge, now: its tip there names the cell, running
    panel = nb.in_output(1, '[data-panel$="-memory"], [data-panel="host-rss"]').first
    panel.scroll_into_view_if_needed()
    box = panel.locator(".u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.98, box["y"] + box["height"] / 2)
    tip = panel.locator(".nbgpumon-tip")
    expect(tip).to_have_text(re.compile(rf"^{re.escape(name)} running \d"))
    expect(tip).to_contain_text(f"import time  # {XSS}")
    shown = _tip_seconds(tip)
    # the mouse rests; the band (and its tip) keep growing with the samples
    nb.wait_until(
        lambda: _tip_seconds(tip) >= shown + 1.0,
        timeout=10_000,
        what="the band's time to grow under the mouse",
    )
    assert nb.execution_count(2) is None, "the cell should still be running"
    nb.screenshot(f"widget_running_cell_{nb.server.kind}")

    page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
    count = nb.wait_for_execution(2, before)
    assert name == f"[{count}]"  # the running row had the number the cell ended with
    row = nb.in_output(1, f'.nbgpumon-table tr[data-cell="{count}"][data-kind="cell"]')
    expect(row.locator("td.status")).to_have_text("interrupted", timeout=15_000)
    expect(nb.in_output(1, ".nbgpumon-table tr.running")).to_have_count(0)
    expect(row).to_have_count(1)
    expect(nb.in_output(1, "img")).to_have_count(0)
    assert xss_requests == []
    # as `%gpumon cells`: no column shown whose every row is "—" (here, no GPU: no GPU columns)
    shown, dashes = nb.in_output(1, ".nbgpumon-table").first.evaluate(_SHOWN_AND_ALL_DASHES)
    assert {"cell", "status", "time", "source"} <= set(shown) and dashes == [], (shown, dashes)
    page.record.assert_clean()


def test_a_ledger_of_10000_entries_scrolls_to_its_oldest_with_only_a_few_rows_in_the_dom(
    page, open_notebook
):
    from playwright.sync_api import expect

    xss_requests = requests_for_xss(page)
    many = 9_990  # with the notebook's own cells, just under the ledger's 10,000
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            f"import nbgpumon\nfor k in range({many}):\n"
            f"    with nbgpumon.track(f'step {{k}} {XSS}'):\n        pass",
            "%gpumon",
            "y = 2  # after the widget",
        ]
    )
    nb.run_cell(0)
    filled = nb.run_cell(1, timeout=120_000)
    shown = nb.run_cell(2)
    widget = nb.in_output(2, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    box = widget.locator(".nbgpumon-cells")
    rows = box.locator("tbody tr")
    # newest first: %gpumon's own cell (a cells message after the widget opened), the cell
    # that made the regions (recorded after them), then its newest region
    expect(rows.first).to_have_attribute("data-cell", str(shown), timeout=30_000)
    expect(rows.nth(1)).to_have_attribute("data-cell", str(filled))
    expect(rows.nth(2)).to_contain_text(f"step {many - 1} ")
    assert rows.count() <= 60, rows.count()  # the rows on screen, not 10,000
    # the scroll bar is the whole ledger's: its bottom is the oldest entry
    height = box.evaluate("e => e.scrollHeight")
    assert height > many * 15, height
    box.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    expect(rows.last).to_contain_text(f"step 0 {XSS}", timeout=10_000)  # as text
    assert rows.count() <= 60, rows.count()
    expect(rows.last).to_have_attribute("data-kind", "region")
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(ARTIFACTS / f"widget_10000_cells_bottom_{nb.server.kind}.png"))

    # a cell run now arrives as one row (the ledger is not sent again) and tops the table
    count = nb.run_cell(3)
    box.evaluate("e => { e.scrollTop = 0; }")
    newest = box.locator(f'tbody tr[data-cell="{count}"][data-kind="cell"]')
    expect(newest).to_contain_text("y = 2", timeout=15_000)
    expect(rows.first).to_have_attribute("data-cell", str(count))
    assert rows.count() <= 60, rows.count()
    widget.screenshot(path=str(ARTIFACTS / f"widget_10000_cells_top_{nb.server.kind}.png"))
    expect(nb.in_output(2, "img")).to_have_count(0)
    assert xss_requests == []
    page.record.assert_clean()
