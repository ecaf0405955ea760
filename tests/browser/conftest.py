"""Fixtures for the browser tests: Chromium through Playwright, JupyterLab 4 and Notebook 7.

The tests need Playwright (the Python package) and a Chromium at /usr/bin/chromium (Debian's
``chromium`` package; Playwright never downloads a browser here). Where either is missing the
browser tests are skipped, with the reason; NBGPUMON_REQUIRE_BROWSER=1 (CI) makes that a failure
instead. NBGPUMON_CHROMIUM names another Chromium binary.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from notebook_page import ARTIFACTS, NotebookPage, safe_name
from required import BROWSER, required, skip_unless_required
from servers import CHROMIUM, JupyterServer, launch_chromium, remove_tree, start_server

HERE = Path(__file__).resolve().parent
REQUIRE_BROWSER = required(BROWSER)
VIEWPORT = {"width": 1280, "height": 800}

# Uncaught errors that a front end itself throws on a clean install, nothing to do with the page
# under test: (message pattern, stack pattern). Keep this list short and exact.
KNOWN_NOISE = [
    # Notebook 7.6's shortcuts plugin reads settingRegistry.plugins[shortcuts].schema when
    # another plugin's settings (docmanager) change before its own are loaded; thrown on every
    # Notebook 7 page load, tree page included, before any notebook code runs.
    (
        re.compile(r"^Cannot read properties of undefined \(reading 'schema'\)$"),
        re.compile(r"/static/notebook/notebook_core\.[0-9a-f]+\.js"),
    ),
]


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return f"playwright is not installed ({e}); pip install playwright"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "browser: drives JupyterLab 4 / Notebook 7 in headless Chromium (Playwright)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mine = [item for item in items if HERE in Path(str(item.fspath)).resolve().parents]
    if not mine:
        return
    reason = browser_unavailable()
    for item in mine:
        item.add_marker(pytest.mark.browser)
        if reason and not REQUIRE_BROWSER:
            item.add_marker(pytest.mark.skip(reason=f"browser tests: {reason}"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # the page fixture reads this to screenshot failures
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# -- browser -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def playwright_instance():
    reason = browser_unavailable()
    if reason:
        skip_unless_required(f"browser tests: {reason}", BROWSER)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    browser = launch_chromium(playwright_instance)
    yield browser
    browser.close()


# -- servers -----------------------------------------------------------------------------------


def _server(kind: str):
    server = start_server(kind)
    try:
        yield server
    finally:
        server.stop()
        log = server.log_path
        if log.exists():
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(log, ARTIFACTS / f"server-{kind}.log")
        remove_tree(server.base_dir)


@pytest.fixture(scope="session")
def lab_server():
    """A JupyterLab 4 server (``jupyter lab``) for the whole session."""
    yield from _server("lab")


@pytest.fixture(scope="session")
def notebook7_server():
    """A Notebook 7 server (``jupyter notebook``) for the whole session."""
    yield from _server("notebook")


@pytest.fixture(params=["lab", "notebook7"])
def jupyter(request) -> JupyterServer:
    """Each front end in turn: the JupyterLab 4 server, then the Notebook 7 one."""
    return request.getfixturevalue(f"{request.param}_server")


# -- page --------------------------------------------------------------------------------------


@dataclass
class PageRecord:
    """What the page said: console messages, uncaught errors, alert/confirm/prompt dialogs."""

    console: list = field(default_factory=list)  # (type, text, location)
    page_errors: list = field(default_factory=list)  # (message, stack)
    dialogs: list = field(default_factory=list)  # (type, message)

    def is_noise(self, message: str, stack: str) -> bool:
        return any(msg.search(message) and stk.search(stack or "") for msg, stk in KNOWN_NOISE)

    @property
    def errors(self) -> list[str]:
        """Console messages of type "error" and uncaught page errors, less KNOWN_NOISE."""
        out = [
            f"console.error: {text} ({loc})" for typ, text, loc in self.console if typ == "error"
        ]
        out += [
            f"page error: {message}\n{stack}"
            for message, stack in self.page_errors
            if not self.is_noise(message, stack)
        ]
        return out

    def assert_clean(self) -> None:
        assert not self.dialogs, f"dialogs were opened: {self.dialogs}"
        assert not self.errors, "errors in the page:\n" + "\n".join(self.errors)


@pytest.fixture
def page(request, browser):
    """A fresh browser context and page; ``page.record`` holds what the page reported.

    Dialogs (alert, confirm, prompt, beforeunload) are recorded and dismissed. A screenshot of
    the page at the end of the test, passed or failed, goes to tests/artifacts/<test name>.png;
    after a failure, or with errors recorded, the page's console is printed (pytest shows it).
    """
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    pg = context.new_page()
    record = PageRecord()

    def on_console(msg):
        loc = msg.location or {}
        record.console.append(
            (msg.type, msg.text, f"{loc.get('url', '')}:{loc.get('lineNumber', '')}")
        )

    def on_dialog(dialog):
        record.dialogs.append((dialog.type, dialog.message))
        with contextlib.suppress(Exception):
            dialog.dismiss()

    pg.on("console", on_console)
    pg.on("pageerror", lambda err: record.page_errors.append((err.message, err.stack or "")))
    pg.on("dialog", on_dialog)
    done = False

    def finish():
        """Screenshot, print the console after a failure, close the page. Idempotent; the
        open_notebook fixture calls it before it stops kernels, so that the screenshot shows
        the page as the test left it."""
        nonlocal done
        if done:
            return
        done = True
        name = safe_name(request.node.name)
        report = getattr(request.node, "rep_call", None)
        failed = report is not None and report.failed
        with contextlib.suppress(Exception):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        if failed or record.errors:
            for typ, text, loc in record.console:
                print(f"[console.{typ}] {text} ({loc})")
            for message, stack in record.page_errors:
                print(f"[pageerror] {message}\n{stack}")
        context.close()

    pg.record = record  # type: ignore[attr-defined]
    pg.finish = finish  # type: ignore[attr-defined]
    yield pg
    finish()


@pytest.fixture
def open_notebook(page, jupyter, request):
    """open_notebook(cells) -> NotebookPage: write <test name>.ipynb into ``jupyter``'s root (a
    kernel of its own per test and front end), open it in ``page``, wait for its kernel. After
    the test: the page's screenshot, then the kernel is shut down."""
    opened: list[NotebookPage] = []

    def make(cells, name: str | None = None) -> NotebookPage:
        name = name or f"{safe_name(request.node.name)}.ipynb"
        nb = NotebookPage.create(page, jupyter, name, cells)
        opened.append(nb)
        return nb.open()

    yield make
    page.finish()
    for nb in opened:
        with contextlib.suppress(Exception):
            nb.shutdown_kernel()
