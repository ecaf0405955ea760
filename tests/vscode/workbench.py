"""A page object for a notebook in VS Code's workbench (code-server), on a kernel of a Jupyter
server reached by URL.

The workbench is Code-OSS's DOM: the Explorer's rows, editor tabs, the notebook editor and its
toolbar, and the quick input (the picker, one list and one text box, reused by every step). A
notebook's outputs are not in the page: they render in a webview, an iframe inside an iframe
(``…/webview/browser/pre/…``), so they are looked up in every frame of the page.

Every step waits for what it needs, with a deadline; a step the workbench is known to race (the
notebook opening as JSON text before the ipynb support registered) is retried.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Locator, Page

OPEN_TIMEOUT_MS = 120_000  # the workbench, the extension host and the Jupyter extension
STEP_TIMEOUT_MS = 30_000

NOTEBOOK_EDITOR = ".notebook-editor"
QUICK_INPUT = ".quick-input-widget"


class Workbench:
    """VS Code's workbench in ``page``, with one folder open."""

    def __init__(self, page: Page):
        self.page = page

    def open_folder(self, url: str) -> Workbench:
        self.page.goto(url, wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_MS)
        self.page.locator(".monaco-workbench").wait_for(timeout=OPEN_TIMEOUT_MS)
        self.page.locator(".explorer-folders-view").wait_for(timeout=OPEN_TIMEOUT_MS)
        return self

    # -- the notebook ------------------------------------------------------------------------

    def open_notebook(self, name: str, timeout_ms: float = OPEN_TIMEOUT_MS) -> None:
        """Click ``name`` in the Explorer until it opens in the notebook editor. Until the
        Jupyter extension has registered the ipynb editor, a click opens the file as JSON
        text: that editor is closed and the file clicked again."""
        row = self.page.locator(".explorer-folders-view .monaco-list-row", has_text=name)
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            row.first.click(timeout=STEP_TIMEOUT_MS)
            if self._wait_for_notebook_editor(min(10.0, _left(deadline))):
                return
            if _left(deadline) <= 0:
                raise TimeoutError(f"{name} did not open in the notebook editor")
            print(f"{name} opened as text, not as a notebook: closing it and opening it again")
            self.close_editors()

    def _wait_for_notebook_editor(self, seconds: float) -> bool:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            self.page.locator(NOTEBOOK_EDITOR).first.wait_for(timeout=max(seconds, 0.1) * 1000)
        except PlaywrightTimeout:
            return False
        return True

    def close_editors(self) -> None:
        self.command("View: Close All Editors")
        self.page.locator(".editor-group-container .tab").first.wait_for(
            state="detached", timeout=STEP_TIMEOUT_MS
        )

    def command(self, title: str, timeout_ms: float = 2 * STEP_TIMEOUT_MS) -> None:
        """Run a command from the command palette by its title ("Notebook: Run All"). The
        palette lists only the commands the focused part of the workbench allows (CI once saw
        "Notebook: Run All" missing right after the kernel picker closed): until it is listed,
        the palette is closed, the active editor focused and the palette opened again."""
        box = self.page.locator(f"{QUICK_INPUT} .quick-input-box input")

        def ask(left_s: float) -> None:
            self.page.keyboard.press("F1")
            box.wait_for(timeout=STEP_TIMEOUT_MS)
            box.fill(f">{title}")
            self.pick(title, exact=True, timeout_ms=min(10.0, max(left_s, 0.1)) * 1000)

        def focus_editor() -> None:
            active_tab = self.page.locator(".editor-group-container .tab.active")
            if active_tab.count():
                active_tab.first.click(timeout=STEP_TIMEOUT_MS)

        self._until_it_shows(
            ask,
            lambda: f"the palette did not list {title!r}: focusing the editor and asking again",
            timeout_ms,
            focus_editor,
        )

    def _until_it_shows(
        self,
        ask: Callable[[float], None],
        missing: Callable[[], str],
        timeout_ms: float,
        before_again: Callable[[], None] = lambda: None,
    ) -> None:
        """``ask(seconds left)`` (open a quick input and wait for the step it should show)
        until it shows or ``timeout_ms`` is spent; between tries, say ``missing()``, close the
        quick input and ``before_again()``."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        box = self.page.locator(f"{QUICK_INPUT} .quick-input-box input")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            try:
                ask(_left(deadline))
                return
            except PlaywrightTimeout:
                if _left(deadline) <= 0:
                    raise
            print(missing())
            self.page.keyboard.press("Escape")
            box.wait_for(state="hidden", timeout=STEP_TIMEOUT_MS)
            before_again()

    # -- the kernel picker -------------------------------------------------------------------

    def connect_kernel(self, server_url: str, kernel: str = "Python 3") -> None:
        """Select Kernel → Existing Jupyter Server… → the URL (with its token) → the
        display name as proposed → ``kernel``; then wait for the toolbar to name it.

        CI once saw the picker never ask for the URL after "Existing Jupyter Server..." was
        clicked (the list was still being filled in): until it asks, the picker is closed and
        opened again."""
        toolbar = self.page.locator(".notebook-toolbar-container")
        box = self.page.locator(f"{QUICK_INPUT} .quick-input-box input")

        def ask(_left_s: float) -> None:
            toolbar.get_by_text("Select Kernel").first.click(timeout=OPEN_TIMEOUT_MS)
            self.pick("Existing Jupyter Server...", timeout_ms=OPEN_TIMEOUT_MS)
            self._wait_for_prompt(re.compile("URL", re.I))

        self._until_it_shows(
            ask,
            lambda: (
                f"the kernel picker did not ask for a URL ({self._quick_input_text()!r}): again"
            ),
            OPEN_TIMEOUT_MS,
        )
        box.fill(server_url)
        box.press("Enter")
        self._wait_for_prompt(re.compile("display name", re.I))
        box.press("Enter")  # the name it proposes
        self.pick(kernel, timeout_ms=OPEN_TIMEOUT_MS)
        toolbar.locator(".kernel-label, .action-label", has_text=kernel).first.wait_for(
            timeout=OPEN_TIMEOUT_MS
        )

    def _quick_input_text(self) -> str:
        """What the quick input shows now (for a message when a step did not come)."""
        widget = self.page.locator(QUICK_INPUT)
        if not widget.count():
            return "no quick input"
        return " ".join(widget.first.inner_text(timeout=STEP_TIMEOUT_MS).split())[:300]

    def _wait_for_prompt(self, text: re.Pattern) -> None:
        """Wait for the quick input to ask for ``text`` (its title, placeholder or message)."""
        self.page.wait_for_function(
            """([sel, src, flags]) => {
                const w = document.querySelector(sel);
                if (!w || w.style.display === 'none') return false;
                const input = w.querySelector('.quick-input-box input');
                const said = [w.querySelector('.quick-input-title')?.textContent,
                              w.querySelector('.quick-input-message')?.textContent,
                              input?.placeholder, input?.getAttribute('aria-label')].join(' ');
                return new RegExp(src, flags).test(said);
            }""",
            arg=[QUICK_INPUT, text.pattern, "i" if text.flags & re.I else ""],
            timeout=STEP_TIMEOUT_MS,
        )

    def pick(self, label: str, exact: bool = False, timeout_ms: float = STEP_TIMEOUT_MS) -> None:
        """Choose the quick input's row ``label`` (starting with it; the whole of it with
        ``exact``), once it is listed."""
        pattern = re.escape(label) + ("$" if exact else "")
        row = self.page.locator(
            f"{QUICK_INPUT} .quick-input-list .monaco-list-row",
            has=self.page.locator(".label-name", has_text=re.compile(rf"^\s*{pattern}")),
        )
        row.first.click(timeout=timeout_ms)

    # -- outputs -----------------------------------------------------------------------------

    def output_frame(self, selector: str, timeout_ms: float = OPEN_TIMEOUT_MS) -> Frame:
        """The webview frame in which ``selector`` (an output's element) is attached."""
        from playwright.sync_api import Error as PlaywrightError

        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            for frame in self.page.frames:
                try:
                    if frame.locator(selector).count():
                        return frame
                except PlaywrightError:  # a frame detached while it was asked
                    continue
            if _left(deadline) <= 0:
                urls = [f.url[:120] for f in self.page.frames]
                raise TimeoutError(f"no frame shows {selector!r}; frames: {urls}")
            self.page.wait_for_timeout(200)

    def output(self, selector: str, timeout_ms: float = OPEN_TIMEOUT_MS) -> Locator:
        return self.output_frame(selector, timeout_ms).locator(selector)


def _left(deadline: float) -> float:
    return deadline - time.monotonic()
