"""Start and stop code-server (Code-OSS in the browser) for the VS Code test.

code-server runs as a process group of its own (its extension host and the Jupyter extension's
helpers are its children), on 127.0.0.1 on a free port, with no password and no TLS, with every
per-user thing under one fresh directory: user data (settings, the servers the Jupyter extension
remembers, whose picker rows would differ on a second run), the config file and logs. The
extensions come from a directory the leg installed them into once (scripts/legs/vscode).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from servers import free_port

START_TIMEOUT_S = 120.0  # a cold start on a busy 2-core machine took about 10 s

# Everything that would pop up, phone home or ask: the README of shared/frontends lists these.
# widgetScriptSources []: the widget's script comes from the Jupyter server (nbclassic's
# /nbextensions/), never from a CDN, which the test machine cannot reach anyway.
USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
    "chat.disableAIFeatures": True,
    "remote.autoForwardPorts": False,
    "jupyter.widgetScriptSources": [],
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "workbench.enableExperiments": False,
    "workbench.tips.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",  # an empty chat pane otherwise
}

EXTENSIONS = ("ms-toolsai.jupyter", "ms-toolsai.jupyter-renderers")


@dataclass
class CodeServer:
    """One running code-server serving ``folder``; ``url`` opens that folder's workbench."""

    binary: Path
    extensions_dir: Path
    base_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    _log_file: object = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.base_dir / "code-server.log"

    def url(self, folder: Path) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={folder}"

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def start(self, timeout: float = START_TIMEOUT_S) -> CodeServer:
        user_data = self.base_dir / "user-data"
        (user_data / "User").mkdir(parents=True, exist_ok=True)
        (user_data / "User" / "settings.json").write_text(
            json.dumps(USER_SETTINGS, indent=1), encoding="utf-8"
        )
        config = self.base_dir / "config.yaml"
        config.write_text(
            f"bind-addr: 127.0.0.1:{self.port}\nauth: none\ncert: false\n", encoding="utf-8"
        )
        cmd = [
            str(self.binary),
            "--config", str(config),
            "--user-data-dir", str(user_data),
            "--extensions-dir", str(self.extensions_dir),
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
        ]  # fmt: skip
        for name in EXTENSIONS:
            cmd += ["--enable-proposed-api", name]
        env = dict(os.environ)
        # its own home: nothing read from or written to the user's ~/.config or ~/.local
        env["HOME"] = str(self.base_dir / "home")
        env.pop("VSCODE_IPC_HOOK_CLI", None)  # started from a VS Code terminal: not that one
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,  # the same whether the leg runs in the foreground or not
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() kills all of it
        )
        deadline = time.monotonic() + timeout
        while not self._alive():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"code-server exited with {self.proc.returncode} before answering"
                    f"\n--- log ---\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"code-server did not answer /healthz within {timeout:.0f} s"
                    f"\n--- log ---\n{self.log_tail()}"
                )
            time.sleep(0.2)
        return self

    def _alive(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/healthz"
            with urllib.request.urlopen(url, timeout=2.0) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to its process group, then SIGKILL; then whatever of its descendants left
        the group (a helper that made a session of its own)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                descendants = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                descendants = []
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its leader
            for child in descendants:
                with contextlib.suppress(psutil.Error):
                    child.kill()  # psutil checks it is still the same process
            psutil.wait_procs(descendants, timeout=timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
