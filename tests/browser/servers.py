"""Start and stop real Jupyter servers (JupyterLab 4, Notebook 7) for the browser tests.

Each server is a subprocess of this interpreter (``sys.executable -m jupyter lab|notebook``, so the
virtualenv's Jupyter, kernel and lab extensions are the ones used), listening on 127.0.0.1 on a
free port, serving a temporary root directory, with a fixed token and no browser.

Everything per-user is isolated into temporary directories: JUPYTER_CONFIG_DIR (and with it Lab's
user settings and workspaces), JUPYTER_DATA_DIR, JUPYTER_RUNTIME_DIR and IPYTHONDIR. The
environment's own ``<sys.prefix>/share/jupyter`` stays on Jupyter's data path (jupyter_core always
adds it), so the lab extensions installed in the virtualenv - the ipywidgets manager
(jupyterlab_widgets), anywidget, bqplot - are found.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from server_process import ServerProcess

TOKEN = "nbgpumon-browser-test-token"
START_TIMEOUT_S = 60.0

# First-run prompts in JupyterLab 4 ("Would you like to get notified about official Jupyter
# news?") and the update check are turned off for both front ends: these are
# default_setting_overrides, read from <config dir>/labconfig by jupyterlab_server.
SETTING_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # nothing may reach the network, and a stale-extension warning must not pop up
    "@jupyterlab/extensionmanager-extension:plugin": {"enabled": False, "disclaimed": False},
}

# Server-side counterparts: no news feed fetch, never check for updates. And window.jupyterapp
# in both front ends, so that tests can run application commands (notebook:run-all-cells), as
# JupyterLab's own Galata tests do.
SERVER_CONFIG = {
    "LabApp": {
        "news_url": None,
        "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
        "expose_app_in_browser": True,
    },
    "JupyterNotebookApp": {"expose_app_in_browser": True},
}


# The Chromium the browser and VS Code tests drive these servers' pages with (Debian's; Playwright
# never downloads a browser here). NBGPUMON_CHROMIUM names another binary.
CHROMIUM = os.environ.get("NBGPUMON_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def launch_chromium(playwright):
    """CHROMIUM, headless, through a Playwright instance (``sync_playwright()``'s)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_env(base: Path) -> dict[str, str]:
    """Environment for a Jupyter server whose per-user state all lives under ``base``."""
    env = dict(os.environ)
    dirs = {
        "JUPYTER_CONFIG_DIR": base / "config",
        "JUPYTER_DATA_DIR": base / "data",
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "IPYTHONDIR": base / "ipython",
    }
    for name, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    # Outside search paths would defeat the isolation; <sys.prefix>/share/jupyter and
    # <sys.prefix>/etc/jupyter are always on the paths anyway (`jupyter --paths`).
    for name in (
        "JUPYTER_PATH",
        "JUPYTER_CONFIG_PATH",
        "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR",
        "JUPYTERLAB_DIR",
    ):
        env.pop(name, None)
    # our config dir before <sys.prefix>/etc/jupyter (which only enables server extensions)
    env["JUPYTER_PREFER_ENV_PATH"] = "0"
    env["JUPYTER_PLATFORM_DIRS"] = "1"  # silence jupyter_core's migration warning
    env["PYTHONUNBUFFERED"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # ipykernel's debugger warning
    env.pop("MPLBACKEND", None)

    config = dirs["JUPYTER_CONFIG_DIR"]
    (config / "labconfig").mkdir(exist_ok=True)
    (config / "labconfig" / "default_setting_overrides.json").write_text(
        json.dumps(SETTING_OVERRIDES, indent=1), encoding="utf-8"
    )
    (config / "jupyter_server_config.json").write_text(
        json.dumps(SERVER_CONFIG, indent=1), encoding="utf-8"
    )
    return env


@dataclass
class JupyterServer:
    """One running server. ``kind`` is "lab" (JupyterLab 4), "notebook" (Notebook 7) or "server"
    (a bare jupyter_server, with whatever server extensions its environment enables)."""

    kind: str
    port: int
    root_dir: Path
    base_dir: Path
    env: dict[str, str]
    log_path: Path
    token: str = TOKEN
    process: ServerProcess = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.process = ServerProcess(f"jupyter {self.kind}", self.log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, name: str) -> str:
        """The page that opens notebook ``name`` (a path relative to the root dir)."""
        path = "lab/tree" if self.kind == "lab" else "notebooks"
        return f"{self.url}/{path}/{urllib.parse.quote(name)}?token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 5.0):
        """``/api/<path>`` with the token; the decoded JSON answer (None when empty)."""
        req = urllib.request.Request(
            f"{self.url}/api/{path.lstrip('/')}",
            headers={"Authorization": f"token {self.token}"},
            method=method,
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read().decode("utf-8")
        return json.loads(body) if body.strip() else None

    def log_tail(self, n: int = 60) -> str:
        return self.process.log_tail(n)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT_S) -> JupyterServer:
        cmd = [
            sys.executable, "-m", "jupyter", self.kind,
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root_dir}",
            f"--IdentityProvider.token={self.token}",
        ]  # fmt: skip
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self.process.start(
            cmd,
            env=self.env,
            ready=lambda: "started" in self.api("status", timeout=2.0),
            timeout=timeout,
            what="/api/status",
            cwd=self.root_dir,
        )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the server shuts its kernels down), then SIGKILL; then kill whatever of its
        descendants (kernels run in sessions of their own) outlived it."""
        self.process.stop(timeout)

    def __enter__(self) -> JupyterServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def start_server(kind: str, base_dir: Path | None = None, attempts: int = 3) -> JupyterServer:
    """Start ``jupyter <kind>`` ("lab", "notebook", or "server": no front end of its own, for
    a front end elsewhere that reaches it by URL, as VS Code does) in a fresh temporary tree.

    Retries on another port if the chosen one was taken in between (free_port() races).
    The caller stops it with ``server.stop()`` (and may delete ``server.base_dir``).
    """
    if kind not in ("lab", "notebook", "server"):
        raise ValueError(f"kind must be 'lab', 'notebook' or 'server', not {kind!r}")
    base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix=f"nbgpumon-{kind}-"))
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    env = isolated_env(base)
    error: Exception | None = None
    for attempt in range(attempts):
        server = JupyterServer(
            kind=kind,
            port=free_port(),
            root_dir=root,
            base_dir=base,
            env=env,
            log_path=base / f"server-{attempt}.log",
        )
        try:
            return server.start()
        except RuntimeError as e:
            error = e
            if "address already in use" not in server.log_tail().lower():
                raise
    raise RuntimeError(f"could not start jupyter {kind}") from error


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
