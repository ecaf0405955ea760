"""scripts/demo as a new user runs it: as root too, with no browser, the URL printed plainly."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/lab/tree/quickstart\.ipynb\?token=(\w+)")


def test_the_demo_serves_the_quickstart_notebook_and_prints_its_url():
    env = dict(os.environ, BROWSER="")  # whatever this machine has: the URL must be printed
    demo = subprocess.Popen(
        [str(ROOT / "scripts" / "demo"), "--port", "8931"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        text=True, env=env, start_new_session=True,
    )  # fmt: skip
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 240  # it installs into .venv first
        found = None
        assert demo.stdout is not None
        while found is None and time.monotonic() < deadline:
            line = demo.stdout.readline()
            if not line:
                break  # it exited
            seen.append(line)
            found = URL.search(line)
        assert found, "".join(seen[-30:])
        base, token = found.groups()
        notebook = _get_json(f"{base}/api/contents/quickstart.ipynb?token={token}")
        assert notebook["type"] == "notebook"
        assert any("%load_ext nbgpumon" in c["source"] for c in notebook["content"]["cells"])
        said = "".join(seen)
        assert "nbgpumon demo: JupyterLab serving" in said
        assert "--allow-root" not in said and "Running as root is not recommended" not in said
    finally:
        os.killpg(demo.pid, signal.SIGINT)
        os.killpg(demo.pid, signal.SIGINT)  # twice: jupyter asks for confirmation after one
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()


def _get_json(url: str, timeout: float = 60) -> dict:
    """GET ``url`` once the server answers (it prints its URL as it starts listening)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.load(response)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
