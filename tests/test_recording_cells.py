"""One set of cells per recording, everywhere: a recording started mid-notebook holds the cells
that ended after it started (its ``%gpumon record`` cell included), and the CLI's line, the
HTML page, the report widget, ``Recorded.cells()`` and a comparison all count those, naming
the kernel's earlier cells, which the file keeps too, in the same words."""

from __future__ import annotations

import html
import re
import subprocess
import sys

import pytest

import nbgpumon
from nbgpumon._views.report.bqplot_report import report_widget

from notebook_runner import run_cells

EARLIER = [f"a{i} = {i}" for i in range(8)]
RECORDED = ["b = 1", "import nbgpumon\nwith nbgpumon.track('step'):\n    c = 2", "d = 3"]
WORDS = (
    "4 cells and 1 region; 8 earlier cells of the kernel, from before the recording started, "
    "left out"
)


@pytest.fixture(scope="module")
def mid_notebook(tmp_path_factory):
    """A real kernel: eight cells, then ``%gpumon record PATH``, three cells (one with a
    region), ``%gpumon record off``; the recording's path."""
    path = tmp_path_factory.mktemp("mid-notebook") / "run.sqlite"
    runs = run_cells(
        ["%load_ext nbgpumon", *EARLIER, f"%gpumon record {path}", *RECORDED, "%gpumon record off"]
    )
    failed = [r for r in runs if r.error]
    assert not failed, [(r.source, r.text) for r in failed]
    return path


def test_the_recording_holds_the_cells_that_ended_after_it_started(mid_notebook):
    session = nbgpumon.load(mid_notebook)
    cells = [r for r in session.cells() if r.kind == "cell"]
    assert [r.label for r in cells] == [f"%gpumon record {mid_notebook}", *RECORDED[:1],
                                        "import nbgpumon", "d = 3"]  # fmt: skip
    assert [r.label for r in session.cells() if r.kind == "region"] == ["step"]
    assert all(r.start + r.duration >= session.started for r in session.cells())
    # the kernel's earlier cells are in the file, apart: each ended before the recording began
    assert [r.label for r in session.earlier] == EARLIER
    assert all(r.start + r.duration < session.started for r in session.earlier)
    assert len(session.cells_frame()) == len(session.cells())


def test_the_cli_the_page_the_widget_the_api_and_compare_count_the_same_cells(
    mid_notebook, tmp_path
):
    page = tmp_path / "report.html"
    cli = subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(mid_notebook), "-o", str(page)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert cli.stdout == f"nbgpumon: wrote {page} (session 1, {WORDS})\n"

    text = page.read_text()
    shown = re.search(r"<dt>cells</dt><dd>([^<]*)</dd>", text).group(1)
    assert html.unescape(shown) == WORDS
    table = re.search(r'<table class="nbgpumon-cells">.*?<tbody>(.*?)</tbody>', text).group(1)
    first_panel = text.split('<g class="panel">')[1]

    session = nbgpumon.load(mid_notebook)
    title = report_widget(session).title.value
    assert f" · {WORDS} · " in html.unescape(title)

    api_cells = [r for r in session.cells() if r.kind == "cell"]
    assert len(api_cells) == 4 and session.earlier_cells == 8

    comparison = nbgpumon.compare(mid_notebook, mid_notebook)
    paired = [c for c in comparison.changes if c.pair.kind == "cell"]
    assert len(paired) == len(api_cells)
    assert {(c.pair.a.label, c.pair.how) for c in paired} == {
        (r.label, "same source") for r in api_cells
    }
    earlier = "(8 earlier cells of the kernel, from before the recording started, left out)"
    assert f"A: {mid_notebook} (session 1) {earlier}" in comparison.table().text

    # the page lists each cell and region once, and bands each cell
    assert table.count("<tr>") == len(session.cells()) == 5
    assert first_panel.count('class="band"') == len(api_cells)
