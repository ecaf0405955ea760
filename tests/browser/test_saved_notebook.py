"""A notebook run headless by nbclient, saved, exported by nbconvert to HTML and opened in
Chromium with the network off: what nbviewer and an HTML export show, with no kernel."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from notebook_page import open_offline

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext nbgpumon\nimport numpy as np, time  # numpy's own memory: not the next cell's",
    "%gpumon summary on",
    "keep = np.ones(2**24)  # 128 MiB\ntime.sleep(1.5)",
    "%gpumon",
    "%gpumon --static",
    "x = 1  # <img src=x onerror=alert(1)>\ntime.sleep(0.5)",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _run_save_export(tmp_path: Path, store_widget_state: bool) -> Path:
    from nbconvert import HTMLExporter  # here, so that a machine without it (the GPU's) collects

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        store_widget_state=store_widget_state,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    saved = tmp_path / "run.ipynb"
    nbformat.write(nb, saved)
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(saved, as_version=4))
    page = tmp_path / "run.html"
    page.write_text(body, encoding="utf-8")
    return page


def _svg_text(output) -> str:
    """The SVG markup an output shows: inline, or as nbconvert's <img src="data:...">."""
    img = output.locator("img")
    if img.count():
        src = img.first.get_attribute("src")
        assert src.startswith("data:image/svg+xml;base64,"), src[:60]
        return base64.b64decode(src.split(",", 1)[1]).decode()
    return output.locator("svg").first.evaluate("e => e.outerHTML")


def _outputs(page, cell: int):
    return page.locator(".jp-Cell.jp-CodeCell").nth(cell).locator(".jp-OutputArea-output")


def test_the_saved_notebook_shows_both_pictures_and_the_summaries_without_a_kernel(page, tmp_path):
    # A notebook saved without widget state: JupyterLab's and Notebook 7's default
    # (saveState off), and nbclient's with store_widget_state=False.
    html = _run_save_export(tmp_path, store_widget_state=False)
    requested = open_offline(page, html)
    page.locator(".jp-Cell").last.wait_for(state="visible")
    widget_cell, static_cell = _outputs(page, 3), _outputs(page, 4)
    for shown in (widget_cell, static_cell):
        picture = shown.locator("svg, img").first
        picture.wait_for(state="visible")
        box = picture.bounding_box()
        assert box["width"] > 500 and box["height"] > 100, box
    # the widget's picture is the session as %gpumon showed it: the 128 MiB cell's band
    assert ">[3]</text>" in _svg_text(widget_cell.first)
    # --static was redrawn by the main thread after the last cell: that cell is in it
    assert ">[6]</text>" in _svg_text(static_cell.first)
    text = page.locator("body").inner_text()
    # the summary lines: 128 MiB kept, and the cell's own churn (120-140 MiB in all)
    assert re.search(r"\[3\] host \+1[23]\d(\.\d)? MiB", text) and "keep 128 MiB" in text, text
    assert page.locator(f'script[type="{WIDGET_VIEW}"]').count() == 0
    assert page.locator("img[src='x']").count() == 0
    assert all(u.startswith("file://") or "cdnjs" in u or "unpkg" in u for u in requested)


def test_with_nbclients_default_the_widget_state_is_saved_and_offline_the_chart_is_not_drawn(
    page, tmp_path
):
    # nbclient (papermill, `jupyter execute`, `nbconvert --execute`) saves widget state by
    # default; nbconvert then prefers the widget to its picture, and draws it with
    # @jupyter-widgets/html-manager from unpkg.com. With no network nothing loads: the
    # README says to run with store_widget_state=False for a page that shows the picture.
    html = _run_save_export(tmp_path, store_widget_state=True)
    open_offline(page, html)
    page.locator(".jp-Cell").last.wait_for(state="visible")
    widget_cell = _outputs(page, 3)
    assert widget_cell.locator(f'script[type="{WIDGET_VIEW}"]').count() == 1
    assert widget_cell.locator("svg, img").count() == 0
    assert _outputs(page, 4).locator("svg").count() == 1  # --static is a picture anyway
