"""The live chart in Voilà 0.5: the page opens after the notebook ran (Voilà runs it when the
page is asked for), draws the chart, and it moves live from the sampler's thread, with no hole
between what came before the page connected and the stream, and no note that samples did not
arrive (Voilà delivers what a background thread sends)."""

from __future__ import annotations

import pytest

from frontend_servers import running, voila_server
from notebook_page import ARTIFACTS, write_notebook
from widget_rows import times, wait_newer, widest_step

pytestmark = pytest.mark.browser

NOTEBOOK = "chart.ipynb"
MAX_STEP_S = 1.5  # the sampler ticks every 0.1 s; a loaded machine may stall it a little


def test_the_chart_draws_and_moves_live_in_voila(page):
    server, path = voila_server(NOTEBOOK, lambda root: write_notebook(
        root / NOTEBOOK, ["%load_ext nbgpumon", "%gpumon"]))  # fmt: skip
    # Voilà's page template links Font Awesome from a CDN; nothing here reaches the network
    page.route("https://cdn.jsdelivr.net/**", lambda route: route.fulfill(
        status=200, content_type="text/css", body=""))  # fmt: skip
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
        page.screenshot(path=str(ARTIFACTS / "voila_chart.png"))
        page.record.assert_clean()
