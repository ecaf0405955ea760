"""nbgpumon's text in a narrow notebook wraps between words, in a real JupyterLab 4 and
Notebook 7: ``%gpumon snapshot`` and ``%gpumon status`` say "no NVIDIA driver?", never "no N" at
a line's end and "VIDIA" on the next (the front end's own ``<pre>`` style breaks anywhere)."""

from __future__ import annotations

import pytest

from notebook_page import ARTIFACTS

pytestmark = pytest.mark.browser

# a page where an output is about 360 px wide (Lab shows the file list beside the notebook)
NARROW = {"lab": {"width": 780, "height": 900}, "notebook": {"width": 440, "height": 900}}

# For each <pre> in an output: its words that a line break cuts in two although they fit on a
# line of their own (a word longer than the line may be broken), and how many lines it takes on
# screen beside how many it has.
SPLIT_WORDS_JS = """
(pre) => {
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  const lines = (range) => new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
  const split = [];
  let shown = 0;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const whole = document.createRange();
    whole.selectNodeContents(n);
    shown += lines(whole);
    for (const m of n.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(n, m.index);
      range.setEnd(n, m.index + 1);
      const charWidth = range.getBoundingClientRect().width;  // monospace: every character's
      range.setEnd(n, m.index + m[0].length);
      if (lines(range) > 1 && m[0].length * charWidth < pre.clientWidth) split.push(m[0]);
    }
  }
  return { split, shown, written: pre.textContent.split("\\n").length };
}
"""


def test_status_text_wraps_between_words_in_a_narrow_notebook(page, open_notebook):
    nb = open_notebook(
        [
            "%load_ext nbgpumon",
            "%gpumon snapshot",
            "%gpumon status",
            # the same words in a bare <pre>, as the front end styles it: the control
            "from IPython.display import HTML\nimport html, nbgpumon\n"
            "from nbgpumon._views.status.session_status import status_line\n"
            "HTML(f'<pre>{html.escape(status_line(nbgpumon.monitor().data.status()))}</pre>')",
        ]
    )
    for i in range(4):
        nb.run_cell(i)
    snapshot, status, control = (nb.in_output(i, "pre").first for i in (1, 2, 3))
    for pre in (snapshot, status, control):
        pre.wait_for(state="visible", timeout=30_000)
    # narrow once it ran (the page's kernel-idle check reads a toolbar a narrow page hides)
    page.set_viewport_size(NARROW[nb.server.kind])
    nb.wait_until(lambda: snapshot.bounding_box()["width"] < 420, what="a narrow output")
    assert "NVIDIA" in (snapshot.text_content() or "")  # "no NVIDIA driver?" on this machine
    control_words = control.evaluate(SPLIT_WORDS_JS)
    assert control_words["split"], control_words  # the front end's own <pre> cuts words
    for pre in (snapshot, status):
        found = pre.evaluate(SPLIT_WORDS_JS)
        assert found["shown"] > found["written"], found  # it is narrow: lines do wrap
        assert found["split"] == [], found  # and never inside a word
    snapshot.scroll_into_view_if_needed()
    nb.cell(1).screenshot(path=str(ARTIFACTS / f"snapshot_narrow_{nb.server.kind}.png"))
