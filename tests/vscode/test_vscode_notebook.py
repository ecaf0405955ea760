"""nbgpumon in VS Code's notebook UI: code-server with VS Code's Jupyter and Jupyter Renderers
extensions, on a kernel of a Jupyter server reached by URL. The live chart draws and moves while
a long cell runs, and the ledger lists the user's cells only: not the helper code that the
Jupyter extension runs in the kernel itself (``store_history=False``, Microsoft's copyright
header as its source)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat

from workbench import Workbench

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
SLEEP_S = 10


def _write_notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)


def _read_json(path: Path):
    """What ``path`` holds, or None while it is missing or still being written."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _wait_until(predicate, seconds: float, what):
    """Poll ``predicate`` until it is truthy, for at most ``seconds``; ``what`` (a string, or a
    function giving one) says what was awaited."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {said}")
        time.sleep(0.1)
    return value


def test_the_chart_moves_while_a_cell_runs_and_the_ledger_lists_only_the_users_cells(
    tmp_path, jupyter, code_server, page
):
    from playwright.sync_api import expect

    folder = tmp_path / "workspace"
    folder.mkdir()
    ledger_file = folder / "ledger.json"
    user_cells = [
        "%load_ext nbgpumon",
        "%gpumon",
        f"import time\ntime.sleep({SLEEP_S})",
        # the kernel's own account, as the ledger holds it (the kernel's working directory
        # is the Jupyter server's, so the path is absolute)
        "import json, nbgpumon\n"
        "rows = [[c.execution_count, c.source] for c in nbgpumon.cells() if c.kind == 'cell']\n"
        f"open({str(ledger_file)!r}, 'w').write(json.dumps(rows))",
    ]
    _write_notebook(folder / "monitor.ipynb", user_cells)

    wb = Workbench(page).open_folder(code_server.url(folder))
    wb.open_notebook("monitor.ipynb")
    wb.connect_kernel(f"{jupyter.url}/?token={jupyter.token}")
    wb.command("Notebook: Run All")

    # The chart draws: its panels' canvases, and rows from the sampler.
    widget = wb.output(".nbgpumon-widget")
    expect(widget).to_be_visible(timeout=60_000)
    expect(widget.locator("canvas").first).to_be_visible()
    frame = wb.output_frame(".nbgpumon-widget")
    running = frame.locator(".nbgpumon-table tbody tr.running")
    expect(running).to_have_count(1, timeout=30_000)  # the sleep: the table's live row
    expect(running.locator("td.source")).to_have_text("import time")
    # a text column reads from the left (the page's own rules for outputs align cells right)
    align = running.locator("td.source").evaluate("td => getComputedStyle(td).textAlign")
    assert align in ("left", "start"), align

    # It moves while that cell runs: the row count, read again and again while the table
    # still shows the running row, grows twice.
    seen: list[int] = []

    def grew_twice() -> bool:
        points = int(widget.get_attribute("data-points") or 0)
        if running.count() == 1 and (not seen or points != seen[-1]):
            seen.append(points)
        return len(seen) >= 3

    _wait_until(
        grew_twice, 2 * SLEEP_S, lambda: f"the chart to grow twice while the cell ran: {seen}"
    )
    assert seen == sorted(seen) and seen[0] > 0, seen
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "vscode_chart_running.png"))

    # The ledger, as the kernel holds it once the sleep is over: the user's cells after
    # %load_ext (which is measured from the cell after it), each once, none of VS Code's.
    rows = _wait_until(lambda: _read_json(ledger_file), 60, "the last cell to write the ledger")
    sources = [source for _, source in rows]
    firsts = [f"[{count}] {source.splitlines()[0]}" for count, source in rows]  # for messages
    helper = any("Microsoft" in source for source in sources)  # its copyright header
    assert not helper, f"VS Code's helper code is a ledger row: {firsts}"
    assert sources == user_cells[1:3], firsts
    counts = [count for count, _ in rows]
    assert counts == sorted(set(counts)), firsts  # one row per execution, in order

    # and as the widget's table shows it: the user's cells, the last one included
    table = frame.locator('.nbgpumon-table tbody tr[data-kind="cell"] td.source')
    labels = [source.splitlines()[0] for source in user_cells[1:]]
    expect(table).to_have_count(len(labels), timeout=30_000)
    assert sorted(table.all_text_contents()) == sorted(labels)
    page.screenshot(path=str(ARTIFACTS / "vscode_notebook.png"))
