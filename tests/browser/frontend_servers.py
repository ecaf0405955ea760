"""Voilà and marimo servers for the browser tests, as /work/shared/frontends/README.md ran them:
each a subprocess of this interpreter's environment on 127.0.0.1 and a free port, serving a
temporary directory, its per-user state in temporary directories too, stopped (with whatever
it started) even when a test fails."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

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
    proc: subprocess.Popen | None = None
    log_path: Path = field(init=False)
    _log: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.log_path = self.base / f"{self.name}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def start(self, timeout: float = START_TIMEOUT_S) -> PageServer:
        self.port = free_port()
        env = isolated_env(self.base)
        for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
            path = self.base / name.lower()
            path.mkdir(exist_ok=True)
            env[name] = str(path)  # marimo keeps its config and state there
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [part.format(port=self.port) for part in self.command],
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=2.0) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.name} did not answer in {timeout:.0f}s\n{self.log_tail()}"
                )
            time.sleep(0.3)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL; then whatever of its descendants (kernels) outlived it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                descendants = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                descendants = []
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=timeout)
            for child in descendants:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            psutil.wait_procs(descendants, timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None


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
