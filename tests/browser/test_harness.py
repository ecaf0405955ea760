"""Smoke tests of the browser harness itself, in JupyterLab 4 and in Notebook 7.

``jupyter`` is each server in turn; ``page`` records console errors, page errors and dialogs,
and leaves a screenshot in tests/artifacts/<test name>.png; ``open_notebook(cells)`` writes,
opens and returns a notebook_page.NotebookPage (conftest.py).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"


def test_one_plus_one(page, open_notebook):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    nb = open_notebook(["1 + 1"])
    assert nb.run_cell(0) == 1
    # the prompt's number comes with the reply, the output on another channel: wait for it
    expect(nb.outputs(0)).to_have_text("2")
    assert nb.prompt(0).text_content().strip() == "[1]:"
    page.record.assert_clean()


def test_printed_html_is_text(page, open_notebook):
    from playwright.sync_api import expect

    nb = open_notebook([f"print({XSS!r})", "'after'"])
    assert nb.run_all() == [1, 2]
    expect(nb.outputs(0)).to_have_text(XSS)
    # a stream output, shown as text: no <img> element, so nothing for onerror to run
    expect(nb.outputs(0)).to_have_attribute("data-mime-type", "application/vnd.jupyter.stdout")
    assert nb.in_output(0, "img").count() == 0
    # the second cell's output shows after it: by then an <img> would have failed to load
    expect(nb.outputs(1)).to_have_text("'after'")
    assert page.record.dialogs == []
    page.record.assert_clean()


def test_harness_sees_an_alert(page, open_notebook):
    """The check above can fail: an HTML output (trusted, since this session produced it) whose
    <img> does run onerror is recorded as a dialog, and its failed load as a console error."""
    nb = open_notebook([f"from IPython.display import HTML\nHTML({XSS!r})"])
    nb.run_cell(0)
    dialogs = nb.wait_until(lambda: page.record.dialogs, timeout=15_000, what="the alert")
    assert dialogs == [("alert", "1")]
    assert nb.in_output(0, "img").count() == 1
    # the failed load's console message need not arrive before the dialog does
    nb.wait_until(
        lambda: any("404" in e for e in page.record.errors),
        timeout=15_000,
        what="a 404 console error for the image",
    )


def test_ipywidget_renders(page, open_notebook):
    from playwright.sync_api import expect

    nb = open_notebook(["import ipywidgets as w\nw.IntSlider(value=7, description='seven')"])
    nb.run_cell(0)
    # rendered by the widget manager (jupyterlab_widgets), not its text/plain fallback
    nb.in_output(0, ".jupyter-widgets.widget-slider").wait_for(state="visible", timeout=30_000)
    expect(nb.in_output(0, ".widget-label").first).to_have_text("seven")
    expect(nb.in_output(0, ".widget-readout").first).to_have_text("7")
    expect(nb.in_output(0, ".noUi-handle, .slider-handle").first).to_be_attached()
    assert "IntSlider(" not in nb.output_text(0)
    assert "Error displaying widget" not in nb.output_text(0)
    page.record.assert_clean()
