"""The live chart in Voilà 0.5: the page opens after the notebook ran (Voilà runs it when the
page is asked for), draws the chart, and it moves live from the sampler's thread, with no hole
between what came before the page connected and the stream, and no note that samples did not
arrive (Voilà delivers what a background thread sends)."""

from __future__ import annotations

import pytest

from frontend_servers import running, voila_server
from notebook_page import ARTIFACTS, write_notebook
from widget_rows import assert_moves_live

pytestmark = pytest.mark.browser

NOTEBOOK = "chart.ipynb"


def test_the_chart_draws_and_moves_live_in_voila(page):
    server, path = voila_server(NOTEBOOK, lambda root: write_notebook(
        root / NOTEBOOK, ["%load_ext nbgpumon", "%gpumon"]))  # fmt: skip
    # Voilà's page template links Font Awesome from a CDN; nothing here reaches the network
    page.route("https://cdn.jsdelivr.net/**", lambda route: route.fulfill(
        status=200, content_type="text/css", body=""))  # fmt: skip
    with running(server):
        page.goto(server.url + path, wait_until="domcontentloaded", timeout=90_000)
        assert_moves_live(page, ARTIFACTS / "voila_chart.png")
        page.record.assert_clean()
