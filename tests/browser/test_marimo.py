"""The live chart in marimo 0.25 (``marimo run``, an app cell of
``mo.ui.anywidget(nbgpumon.monitor().widget())``): it draws and moves live from the sampler's
thread, with no hole and no note that samples did not arrive (marimo delivers what a
background thread sends; it has no IPython cell events, so no message comes after a cell)."""

from __future__ import annotations

import pytest

from frontend_servers import marimo_server, running
from notebook_page import ARTIFACTS
from widget_rows import assert_moves_live

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


def test_the_chart_draws_and_moves_live_in_marimo(page):
    server, path = marimo_server("app.py", lambda root: (root / "app.py").write_text(APP))
    with running(server):
        page.goto(server.url + path, wait_until="domcontentloaded", timeout=90_000)
        assert_moves_live(page, ARTIFACTS / "marimo_chart.png")
        page.record.assert_clean()
