"""The live chart in marimo 0.25 (``marimo run``, an app cell of
``mo.ui.anywidget(nbgpumon.monitor().widget())``): it draws and moves live from the sampler's
thread, with no hole and no note that samples did not arrive (marimo delivers what a
background thread sends; it has no IPython cell events, so no message comes after a cell)."""

from __future__ import annotations

import pytest

from frontend_servers import marimo_server, running
from notebook_page import ARTIFACTS
from widget_rows import times, wait_newer, widest_step

pytestmark = pytest.mark.browser

APP = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import nbgpumon

    chart = mo.ui.anywidget(nbgpumon.monitor().widget())
    chart
    return


if __name__ == "__main__":
    app.run()
"""
MAX_STEP_S = 1.5  # the sampler ticks every 0.1 s; a loaded machine may stall it a little


def test_the_chart_draws_and_moves_live_in_marimo(page):
    server, path = marimo_server("app.py", lambda root: (root / "app.py").write_text(APP))
    with running(server):
        page.goto(server.url + path, wait_until="domcontentloaded", timeout=90_000)
        widget = page.locator(".nbgpumon-widget").first
        widget.wait_for(state="visible", timeout=90_000)
        first = wait_newer(page, widget, 0.0, timeout_s=60)
        points = int(widget.get_attribute("data-points") or 0)
        latest = wait_newer(page, widget, first + 4, timeout_s=30)  # live, not a snapshot
        page.wait_for_function(
            "([el, n]) => Number(el.dataset.points) > n", arg=[widget.element_handle(), points]
        )
        step = widest_step(times(widget), since=float("-inf"))
        assert step < MAX_STEP_S, f"a break of {step:.1f} s in the rows up to {latest:.1f}"
        note = widget.locator(".nbgpumon-note")
        assert note.is_hidden() and (note.text_content() or "") == ""
        widget.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "marimo_chart.png"))
        page.record.assert_clean()
