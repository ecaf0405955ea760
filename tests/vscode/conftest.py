"""Fixtures for the VS Code test: a Jupyter server, code-server with VS Code's Jupyter
extensions, and Chromium through Playwright.

The test runs in its own leg, scripts/legs/vscode, which installs code-server and the extensions
and names them in NBGPUMON_CODE_SERVER and NBGPUMON_CODE_SERVER_EXTENSIONS. Without those (the
main pytest run) the test is skipped, with that reason; with them, anything missing is a failure.
code-server runs on the first ``node`` on PATH, which must be Node 24: the leg puts its own first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

# the harness of the browser tests (servers.py): the Jupyter server, the Chromium
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "browser"))

from code_server import CodeServer
from servers import CHROMIUM, launch_chromium, remove_tree, start_server

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parent / "artifacts"
CODE_SERVER = os.environ.get("NBGPUMON_CODE_SERVER", "")
EXTENSIONS_DIR = os.environ.get("NBGPUMON_CODE_SERVER_EXTENSIONS", "")
VIEWPORT = {"width": 1400, "height": 900}


def pytest_configure(config):
    if CODE_SERVER:
        # CI cancels a job with SIGTERM: as Ctrl-C, so that the fixtures' teardown still
        # stops code-server's process group and the Jupyter server's kernels
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if CODE_SERVER:
        return
    skip = pytest.mark.skip(reason="VS Code test: runs in scripts/legs/vscode (no code-server)")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def code_server_binary() -> Path:
    binary = Path(CODE_SERVER)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"NBGPUMON_CODE_SERVER={CODE_SERVER} is not an executable", pytrace=False)
    if not Path(EXTENSIONS_DIR).is_dir():
        pytest.fail(f"NBGPUMON_CODE_SERVER_EXTENSIONS={EXTENSIONS_DIR!r} is not a directory")
    return binary


@pytest.fixture
def jupyter():
    """A bare ``jupyter server`` on loopback with a token; nbclassic, in this environment,
    serves /nbextensions/, where VS Code fetches anywidget's script."""
    server = start_server("server")
    try:
        yield server
    finally:
        server.stop()
        _keep_log(server.log_path, "vscode_jupyter_server.log")
        remove_tree(server.base_dir)


@pytest.fixture
def code_server(code_server_binary):
    """code-server on loopback, fresh user data (the extension remembers servers otherwise)."""
    base = Path(tempfile.mkdtemp(prefix="nbgpumon-code-server-"))
    server = CodeServer(code_server_binary, Path(EXTENSIONS_DIR), base)
    try:
        yield server.start()
    finally:
        server.stop()
        _keep_log(server.log_path, "vscode_code_server.log")
        remove_tree(base)


@pytest.fixture
def page(code_server):
    """A page in a fresh browser context that may read the clipboard (the picker's URL box
    reads it). The workbench's console errors and warnings, and uncaught errors, go to stdout,
    which pytest shows after a failure (its info lines are many and say little)."""
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium)", pytrace=False)
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            context = browser.new_context(
                viewport=VIEWPORT, permissions=["clipboard-read", "clipboard-write"]
            )
            context.set_default_timeout(30_000)
            pg = context.new_page()
            pg.on("console", _print_console)
            pg.on("pageerror", lambda err: print(f"[pageerror] {err.message}"))
            yield pg
            context.close()
        finally:
            browser.close()


def _print_console(msg) -> None:
    if msg.type in ("error", "warning"):
        print(f"[console.{msg.type}] {msg.text}")


def _keep_log(path: Path, name: str) -> None:
    if path.exists():
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy(path, ARTIFACTS / name)
