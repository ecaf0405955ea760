"""Voilà and marimo servers for the browser tests, as /work/shared/frontends/README.md ran them:
each a subprocess of this interpreter's environment on 127.0.0.1 and a free port, serving a
temporary directory, its per-user state in temporary directories too, stopped (with whatever
it started) even when a test fails."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from server_process import ServerProcess, answers
from servers import free_port, isolated_env, remove_tree

START_TIMEOUT_S = 90.0  # marimo and Voilà start in seconds; a loaded machine takes longer


@dataclass
class PageServer:
    """One running server, ``command`` with ``{port}`` filled in, serving ``root``."""

    name: str
    command: list[str]
    root: Path
    base: Path
    ready_path: str = "/"
    port: int = 0
    log_path: Path = field(init=False)
    process: ServerProcess = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.log_path = self.base / f"{self.name}.log"
        self.process = ServerProcess(self.name, self.log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 60) -> str:
        return self.process.log_tail(n)

    def start(self, timeout: float = START_TIMEOUT_S) -> PageServer:
        self.port = free_port()
        env = isolated_env(self.base)
        for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
            path = self.base / name.lower()
            path.mkdir(exist_ok=True)
            env[name] = str(path)  # marimo keeps its config and state there
        self.process.start(
            [part.format(port=self.port) for part in self.command],
            env=env,
            ready=lambda: answers(self.url + self.ready_path),
            timeout=timeout,
            what=self.ready_path,
            cwd=self.root,
            every=0.3,
        )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL; then whatever of its descendants (kernels) outlived it."""
        self.process.stop(timeout)


def _tree(name: str) -> tuple[Path, Path]:
    base = Path(tempfile.mkdtemp(prefix=f"nbgpumon-{name}-"))
    root = base / "root"
    root.mkdir()
    return base, root


def voila_server(notebook: str, write) -> tuple[PageServer, str]:
    """Voilà 0.5 serving a directory that ``write(root)`` fills; the server, started, and the
    URL of ``notebook``'s page (it runs the notebook when the page is asked for)."""
    base, root = _tree("voila")
    write(root)
    command = [
        sys.executable, "-m", "voila", "--no-browser", "--port={port}",
        "--Voila.ip=127.0.0.1", "--ServerApp.port_retries=0",
        # Notebook 7's lab extension (the test extra installs it) fails to load in Voilà's
        # page: it asks for a shared module Voilà does not provide. Nothing of nbgpumon's.
        "--VoilaConfiguration.extension_denylist=['@jupyter-notebook/lab-extension']",
        str(root),
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--ServerApp.allow_root=True")
    server = PageServer("voila", command, root, base, ready_path="/voila/tree")
    return server, f"/voila/render/{notebook}"


def marimo_server(app: str, write) -> tuple[PageServer, str]:
    """``marimo run`` of the app file ``app`` that ``write(root)`` wrote; the server, and the
    path of its page."""
    base, root = _tree("marimo")
    write(root)
    command = [
        sys.executable, "-m", "marimo", "run", "--headless", "--no-token",
        "--host", "127.0.0.1", "--port", "{port}", str(root / app),
    ]  # fmt: skip
    return PageServer("marimo", command, root, base, ready_path="/"), "/"


@contextlib.contextmanager
def running(server: PageServer):
    """``server`` started, then stopped and its tree removed, the test passed or not; its log
    copied to tests/artifacts/ first."""
    from notebook_page import ARTIFACTS

    try:
        yield server.start()
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / f"server-{server.name}.log").write_bytes(server.log_path.read_bytes())
        remove_tree(server.base)
