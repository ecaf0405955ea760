"""Start and stop code-server (Code-OSS in the browser) for the VS Code test.

code-server runs as a process group of its own (its extension host and the Jupyter extension's
helpers are its children), on 127.0.0.1 on a free port, with no password and no TLS, with every
per-user thing under one fresh directory: user data (settings, the servers the Jupyter extension
remembers, whose picker rows would differ on a second run), the config file and logs. The
extensions come from a directory the leg installed them into once (scripts/legs/vscode).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from server_process import ServerProcess, answers
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
    process: ServerProcess = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # its own process group: stop() kills all of it
        self.process = ServerProcess("code-server", self.log_path, group=True)

    @property
    def log_path(self) -> Path:
        return self.base_dir / "code-server.log"

    def url(self, folder: Path) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={folder}"

    def log_tail(self, n: int = 60) -> str:
        return self.process.log_tail(n)

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
        self.process.start(
            cmd,
            env=env,
            ready=lambda: answers(f"http://127.0.0.1:{self.port}/healthz"),
            timeout=timeout,
            what="/healthz",
        )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to its process group, then SIGKILL; then whatever of its descendants left
        the group (a helper that made a session of its own)."""
        self.process.stop(timeout)
