"""The live chart in JupyterLab 4 after the page is opened again on a running kernel: the page
starts where the stream is, with no break in the lines around the reconnect and no note that
samples did not arrive (nothing was dropped: the page was away); the rows from before the reload,
which come back in the packed history, hold the numbers the page had drawn for them."""

from __future__ import annotations

import pytest

from widget_rows import newest, times, values, widest_step

pytestmark = pytest.mark.browser

CELLS = ["%load_ext nbgpumon", "%gpumon", "%gpumon"]
MAX_STEP_S = 1.5  # the sampler ticks every 0.1 s; a loaded machine may stall it, not by 15 s
COLUMN = "host.rss"  # the kernel's own memory: never 0, and a real kernel has it on any machine


@pytest.mark.parametrize("jupyter", ["lab"], indirect=True)
def test_a_page_opened_again_on_a_running_kernel_has_no_break_and_no_note(
    page, open_notebook, jupyter
):
    log = jupyter.log_path
    log_start = log.stat().st_size if log.exists() else 0
    nb = open_notebook(CELLS)
    nb.run_cell(0)
    nb.run_cell(1)
    widget = nb.in_output(1, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    shown_at = nb.wait_until(lambda: newest(widget), timeout=30_000, what="a first row")
    # the history was packed after cell 1; let the stream run past it for a while
    nb.wait_until(
        lambda: newest(widget) > shown_at + 6, timeout=30_000, what="6 s of rows streamed"
    )
    away_from = newest(widget)
    before = values(widget, COLUMN)  # mostly the live stream's rows (samples messages)

    # saved first, as a user would be asked to: a page with unsaved outputs asks to stay
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    nb.reload()  # the page again: a new page, the kernel still running
    restored = nb.in_output(1, ".nbgpumon-widget").first
    restored.wait_for(state="visible", timeout=30_000)
    nb.run_cell(2)
    again = nb.in_output(2, ".nbgpumon-widget").first
    again.wait_for(state="visible", timeout=30_000)
    nb.wait_until(
        lambda: newest(again) > away_from + 8,
        timeout=30_000,
        what="rows streamed for 8 s past the reload",
    )

    for view in (restored, again):
        held = times(view)
        assert held[0] is not None and held[0] < away_from - 5, "the history before it"
        step = widest_step(held, since=away_from - 5)
        assert step < MAX_STEP_S, f"a break of {step:.1f} s in the rows around the reload"
        assert view.locator(".nbgpumon-note").is_hidden()
        # the history's rows (those before the reload) carry the values, not only the times
        again_rows = {t: v for t, v in values(view, COLUMN).items() if t in before}
        assert len(again_rows) >= 30, f"only {len(again_rows)} rows of before the reload"
        differ = {t: (before[t], v) for t, v in again_rows.items() if v != before[t]}
        assert differ == {}, f"{len(differ)} rows whose {COLUMN} changed across the reload"
        assert all(v and v > 0 for v in again_rows.values())
        assert (view.locator(".nbgpumon-note").text_content() or "") == ""
    again.scroll_into_view_if_needed()
    nb.screenshot("widget_after_reload")
    logged = log.read_bytes()[log_start:].decode("utf-8", "replace")
    assert "Unknown subshell_id" not in logged, logged[-2000:]
    page.record.assert_clean()
