"""A page object for a notebook opened in JupyterLab 4 or Notebook 7.

Both front ends render the same Lumino notebook widget (``.jp-NotebookPanel`` holding a
``.jp-Notebook`` of ``.jp-Cell``s, each with an ``.jp-InputArea-prompt`` and an output area of
``.jp-OutputArea-output``s), and both put the same execution indicator in the notebook toolbar
(``.jp-Notebook-ExecutionIndicator[data-status]``). Only the URL that opens a notebook differs:
``/lab/tree/NAME.ipynb`` against ``/notebooks/NAME.ipynb`` (``JupyterServer.notebook_url``).

Playwright is imported lazily, so that this module (and the tests importing it) can be collected
where Playwright is not installed; conftest.py then skips the tests.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import nbformat

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

    from servers import JupyterServer

OPEN_TIMEOUT_MS = 60_000
KERNEL_TIMEOUT_MS = 60_000
RUN_TIMEOUT_MS = 60_000

# "[3]:" once cell ran; "[ ]:" never ran; "[*]:" queued or running
DONE_PROMPT = re.compile(r"^\s*\[\s*(\d+)\s*\]:\s*$")

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"

# The notebook panel on screen (in JupyterLab, other restored tabs are hidden).
PANEL = ".jp-NotebookPanel:visible"

# the kernel of the notebook open at ``path`` asked for its info (its reply's status goes out
# on iopub, to every subscriber); false where no such notebook has a kernel
ASK_KERNEL_INFO_JS = """
(path) => {
    for (const widget of window.jupyterapp.shell.widgets('main')) {
        const kernel = widget.context && widget.context.path === path
            && widget.sessionContext && widget.sessionContext.session
            && widget.sessionContext.session.kernel;
        if (kernel) {
            kernel.requestKernelInfo();
            return true;
        }
    }
    return false;
}
"""

KERNEL_READY_JS = """
(panel) => {
    const name = panel.querySelector('.jp-Toolbar-kernelName');
    const status = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    return !!name && !!status
        && !/no kernel/i.test(name.textContent || '')
        && status.getAttribute('data-status') === 'idle';
}
"""


def write_notebook(path: Path, cells: Sequence[str | tuple[str, str]]) -> Path:
    """Write a notebook with a python3 kernelspec. A cell is its code, or ("markdown", text)."""
    nb = nbformat.v4.new_notebook()
    for cell in cells:
        if isinstance(cell, tuple):
            kind, source = cell
            if kind == "markdown":
                nb.cells.append(nbformat.v4.new_markdown_cell(source))
            elif kind == "code":
                nb.cells.append(nbformat.v4.new_code_cell(source))
            else:
                raise ValueError(f"unknown cell type {kind!r}")
        else:
            nb.cells.append(nbformat.v4.new_code_cell(cell))
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def requests_for_xss(page: Page) -> list[str]:
    """Start recording requests for ``x``, the ``src`` of the tests' ``<img src=x onerror=…>``
    text; returns the list that fills up. An ``<img>`` built from that text would request ``x``
    the moment it is created, so no such request (and no ``img``) once the text is on the page
    means none was made: nothing to wait for, no alert to come."""
    seen: list[str] = []

    def on_request(request) -> None:
        if urlparse(request.url).path.endswith("/x"):
            seen.append(request.url)

    page.on("request", on_request)
    return seen


def open_offline(page: Page, path: Path) -> list[str]:
    """Open the file at ``path`` with every request but for files aborted; returns the list of
    every URL asked for, which fills as the page loads (a self-contained page asks only for
    itself)."""
    requested: list[str] = []

    def offline(route) -> None:
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", offline)
    page.goto(path.as_uri())
    return requested


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "page"


class NotebookPage:
    """One notebook, opened in ``page`` from ``server`` (lab or notebook)."""

    def __init__(self, page: Page, server: JupyterServer, name: str):
        self.page = page
        self.server = server
        self.name = name

    # -- creating and opening --------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        page: Page,
        server: JupyterServer,
        name: str,
        cells: Sequence[str | tuple[str, str]],
    ) -> NotebookPage:
        """Write ``name`` (e.g. "smoke.ipynb") into the server's root; does not open it."""
        if not name.endswith(".ipynb"):
            name += ".ipynb"
        write_notebook(server.root_dir / name, cells)
        return cls(page, server, name)

    @property
    def url(self) -> str:
        url = self.server.notebook_url(self.name)
        if self.server.kind == "lab":
            # a fresh workspace: no tabs restored from an earlier test
            url += "&reset"
        return url

    def open(self, timeout: float = OPEN_TIMEOUT_MS) -> NotebookPage:
        """Load the page, wait for the cells, dismiss first-run prompts, wait for the kernel."""
        self.page.goto(self.url, wait_until="domcontentloaded", timeout=timeout)
        return self._ready(timeout)

    def reload(self, timeout: float = OPEN_TIMEOUT_MS) -> NotebookPage:
        """Load the page again, as a user's reload does (its kernel keeps running); wait as
        :meth:`open` does."""
        self.page.reload(wait_until="domcontentloaded", timeout=timeout)
        return self._ready(timeout)

    def _ready(self, timeout: float) -> NotebookPage:
        from playwright.sync_api import expect

        expect(self.cells.first).to_be_visible(timeout=timeout)
        self.dismiss_prompts()
        self.wait_for_kernel_idle(timeout=KERNEL_TIMEOUT_MS)
        self.dismiss_prompts()
        return self

    def dismiss_prompts(self) -> None:
        """Answer first-run prompts if any showed up (servers.py turns them off already).

        A modal dialog (e.g. a kernel picker) gets its default button, and is printed so that
        pytest shows it; JupyterLab's "official Jupyter news?" toast gets "No". Other toasts are
        left alone, to show up in the screenshot.
        """
        from playwright.sync_api import Error as PlaywrightError

        dialogs = self.page.locator(".jp-Dialog")
        for _ in range(3):
            if dialogs.count() == 0:
                break
            text = " ".join((dialogs.first.text_content() or "").split())
            button = dialogs.first.locator(".jp-Dialog-footer .jp-mod-accept")
            if button.count() == 0:
                button = dialogs.first.locator(".jp-Dialog-footer button").last
            print(f"dismissing a dialog: {text[:300]!r}")
            button.first.click()
            dialogs.first.wait_for(state="detached", timeout=5_000)
        news = self.page.locator(".Toastify__toast", has_text=re.compile("news", re.I))
        for _ in range(3):
            if news.count() == 0:
                break
            toast = news.first
            no = toast.locator(".jp-toast-button", has_text=re.compile(r"^\s*No\s*$"))
            print("answering No to the Jupyter news toast")
            with contextlib.suppress(PlaywrightError):  # it may be closing already
                no.first.click(timeout=5_000)
            toast.wait_for(state="detached", timeout=10_000)

    # -- locators ------------------------------------------------------------------------------

    @property
    def panel(self) -> Locator:
        return self.page.locator(PANEL)

    @property
    def notebook(self) -> Locator:
        return self.panel.locator(".jp-Notebook")

    @property
    def cells(self) -> Locator:
        return self.notebook.locator(".jp-Cell")

    def cell(self, i: int) -> Locator:
        return self.cells.nth(i)

    def prompt(self, i: int) -> Locator:
        return self.cell(i).locator(".jp-Cell-inputArea .jp-InputArea-prompt")

    def output_area(self, i: int) -> Locator:
        return self.cell(i).locator(".jp-Cell-outputArea")

    def outputs(self, i: int) -> Locator:
        """Every rendered output of cell ``i`` (stream, result, display, error)."""
        return self.output_area(i).locator(".jp-OutputArea-output")

    def in_output(self, i: int, selector: str) -> Locator:
        """Elements matching ``selector`` inside cell ``i``'s output area."""
        return self.output_area(i).locator(selector)

    # -- kernel and execution ------------------------------------------------------------------

    def kernel_status(self) -> str | None:
        return self.panel.locator(".jp-Notebook-ExecutionIndicator").get_attribute("data-status")

    def wait_for_kernel_idle(self, timeout: float = KERNEL_TIMEOUT_MS) -> None:
        """Kernel connected (toolbar names it, not "No Kernel") and idle, per page and server."""
        deadline = time.monotonic() + timeout / 1000
        handle = self.panel.element_handle(timeout=timeout)
        self.page.wait_for_function(KERNEL_READY_JS, arg=handle, timeout=timeout)
        # and the server agrees: the session for this file has an idle kernel
        asked = time.monotonic()
        while True:
            state = self._server_kernel_state()
            if state == "idle":
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernel of {self.name} is {state!r}, not idle")
            if state == "starting" and time.monotonic() - asked > 1:
                # the server hears the kernel's status on an iopub subscription of its own,
                # which can join after the statuses the page saw (zmq drops what a late
                # subscriber missed): the page asks the kernel once more for one
                self.page.evaluate(ASK_KERNEL_INFO_JS, self.name)
                asked = time.monotonic()
            self.page.wait_for_timeout(100)

    def _server_kernel_state(self) -> str | None:
        for session in self.server.api("sessions"):
            if session.get("path") == self.name and session.get("kernel"):
                return session["kernel"].get("execution_state")
        return None

    def execution_count(self, i: int) -> int | None:
        """The number in cell ``i``'s prompt, None for "[ ]:" or "[*]:"."""
        match = DONE_PROMPT.match(self.prompt(i).text_content() or "")
        return int(match.group(1)) if match else None

    def run_cell(self, i: int, timeout: float = RUN_TIMEOUT_MS, advance: bool = False) -> int:
        """Select cell ``i`` and run it (Ctrl+Enter; Shift+Enter with ``advance``), wait for the
        end of its execution; return its execution count."""
        before = self.execution_count(i)
        # clicking the prompt selects the cell in command mode, without editing it
        self.prompt(i).click()
        self.page.keyboard.press("Shift+Enter" if advance else "Control+Enter")
        return self.wait_for_execution(i, before, timeout)

    def run_all(self, timeout: float = RUN_TIMEOUT_MS) -> list[int | None]:
        """Run every cell (command notebook:run-all-cells) and wait for all the code cells."""
        before = [self.execution_count(i) for i in range(self.cells.count())]
        code = self._nonempty_code_cells()
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        for i in code:
            self.wait_for_execution(i, before[i], timeout)
        return [self.execution_count(i) for i in range(self.cells.count())]

    def _nonempty_code_cells(self) -> list[int]:
        return self.cells.evaluate_all(
            """cells => cells.map((c, i) => [c, i])
                .filter(([c]) => c.classList.contains('jp-CodeCell'))
                .filter(([c]) => (c.querySelector('.cm-content')?.textContent || '').trim())
                .map(([, i]) => i)"""
        )

    def wait_for_execution(
        self, i: int, before: int | None, timeout: float = RUN_TIMEOUT_MS
    ) -> int:
        """Wait until cell ``i``'s prompt shows a number other than ``before`` (so "[*]:" is
        over), then until the kernel is idle again; return that number."""
        from playwright.sync_api import expect

        other = rf"(?!{before}\s*\])" if before is not None else ""
        expect(self.prompt(i)).to_have_text(
            re.compile(rf"^\s*\[\s*{other}\d+\s*\]:\s*$"), timeout=timeout
        )
        handle = self.panel.element_handle(timeout=timeout)
        self.page.wait_for_function(KERNEL_READY_JS, arg=handle, timeout=timeout)
        count = self.execution_count(i)
        assert count is not None
        return count

    # -- reading outputs -----------------------------------------------------------------------

    def output_text(self, i: int) -> str:
        """The text of all of cell ``i``'s outputs, as rendered (textContent), joined by
        newlines."""
        return "\n".join(t.rstrip("\n") for t in self.outputs(i).all_text_contents())

    def wait_for_output(self, i: int, timeout: float = RUN_TIMEOUT_MS) -> Locator:
        """The first output of cell ``i``, once it is attached."""
        first = self.outputs(i).first
        first.wait_for(state="attached", timeout=timeout)
        return first

    def wait_until(self, predicate, timeout: float = RUN_TIMEOUT_MS, what: str = "condition"):
        """Poll a Python-side ``predicate`` (e.g. on what the page's event handlers recorded),
        letting the page's events run in between; its first truthy value."""
        deadline = time.monotonic() + timeout / 1000
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout / 1000:.0f}s waiting for {what}")
            self.page.wait_for_timeout(50)
        return value

    # -- artifacts -----------------------------------------------------------------------------

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        """Save a PNG under tests/artifacts/ and return its path."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{safe_name(name)}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def shutdown_kernel(self) -> None:
        """Delete this notebook's session on the server (its kernel stops)."""
        for session in self.server.api("sessions"):
            if session.get("path") == self.name:
                self.server.api(f"sessions/{session['id']}", method="DELETE")
