"""A test server's process: started with its output in a log file, waited for until it answers,
and stopped with whatever it started.

The Jupyter servers, the Voilà and marimo servers and code-server of the browser and VS Code
tests each own one ``ServerProcess`` and give it their command line, environment and readiness
check; the process's lifecycle is this module's alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether ``url`` answers HTTP 200 (an error, or no answer, raises OSError)."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status == 200


class ServerProcess:
    """The process of the server ``name``, its stdout and stderr in ``log_path``.

    ``group``: the server's helpers stay in its process group, and ``stop()`` signals the whole
    group (code-server); otherwise only the process itself (which stops its own children).
    """

    def __init__(self, name: str, log_path: Path, group: bool = False) -> None:
        self.name = name
        self.log_path = log_path
        self.group = group
        self.proc: subprocess.Popen | None = None
        self._log = None

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def start(
        self,
        cmd: Sequence[str],
        env: dict[str, str],
        ready: Callable[[], object],
        timeout: float,
        what: str,
        cwd: Path | None = None,
        every: float = 0.2,
    ) -> None:
        """Run ``cmd`` in a session of its own (no terminal signals from pytest's terminal; the
        same whether the run is in the foreground or not), then poll ``ready()`` every
        ``every`` s until it is truthy; an OSError or ValueError from it counts as not yet.
        A RuntimeError with the log's tail if the process exits first, or (stopping it) if
        ``timeout`` s pass; ``what`` names what it did not answer."""
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
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
                    f"{self.name} exited with {self.proc.returncode} before answering"
                    f"\n--- log ---\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError, ValueError):
                if ready():
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.name} did not answer {what} within {timeout:.0f} s"
                    f"\n--- log ---\n{self.log_tail()}"
                )
            time.sleep(every)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (to the process group with ``group``), then SIGKILL; then whatever of its
        descendants outlived it (kernels and helpers that made sessions of their own). The log
        is closed. Does nothing more once stopped."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                descendants = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                descendants = []
            if self.group:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            elif proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
            if self.group:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its leader
            for child in descendants:
                with contextlib.suppress(psutil.Error):
                    child.kill()  # psutil checks it is still the same process
            psutil.wait_procs(descendants, timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
