"""Who another process on a GPU is when it is a Jupyter kernel: its kernel id, the notebook it
runs, and whether it is busy or for how long it has been idle.

The kernel id is in its command line (the connection file ``kernel-<id>.json``). The notebook
is what a running Jupyter server's sessions say for that id, or else ``JPY_SESSION_NAME`` from
the kernel's environment (Jupyter Server sets it for a kernel it starts for a session).

:meth:`JupyterKernels.identify` never blocks: the servers' sessions are fetched by a short-lived
daemon thread (one at a time, at most every ``refresh_every`` seconds), and identify answers
from what the last fetch found. A first call may give the kernel id alone; a later one, after
the fetch, the notebook and its state.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .server_sessions import SessionFacts, default_runtime_dirs, fetch_sessions

# ``-f <file>`` is ipykernel's short form of --IPKernelApp.connection_file; other kernels
# (xeus) take -f too
CONNECTION_OPTIONS = ("-f", "--f", "--IPKernelApp.connection_file", "--connection-file")
LAUNCHER_MODULES = frozenset({"ipykernel_launcher", "ipykernel"})
LAUNCHER_FILES = frozenset({"ipykernel_launcher.py"})
CONNECTION_FILE = re.compile(r"^kernel-(?P<id>[A-Za-z0-9][A-Za-z0-9_.-]*)\.json$")
LEARNED_DIRS = 8  # runtime directories learned from kernels' connection files, at most


@dataclass(frozen=True, slots=True)
class KernelIdentity:
    """A Jupyter kernel as its command line, environment and server say."""

    kernel_id: str | None  # from its connection file's name, kernel-<id>.json
    # the notebook's path as its server knows it (relative to the server's root), else the
    # kernel's JPY_SESSION_NAME as given (an absolute path when the front end named the file)
    notebook: str | None
    idle_seconds: float | None  # since its last activity, when its server says it is idle
    execution_state: str | None  # "idle", "busy"... as its server says; None when not known


@dataclass(frozen=True, slots=True)
class KernelArgs:
    """What a command line says about a kernel."""

    is_kernel: bool
    kernel_id: str | None
    connection_file: str | None


def kernel_args(argv: Sequence[str]) -> KernelArgs:
    """Whether ``argv`` is a Jupyter kernel's (ipykernel's launcher, or any program given a
    connection file ``kernel-<id>.json``), and its kernel id and connection file."""
    launcher = False
    connection: str | None = None
    for i, arg in enumerate(argv):
        value: str | None = None
        if arg in CONNECTION_OPTIONS:
            value = argv[i + 1] if i + 1 < len(argv) else None
        else:
            option, equals, rest = arg.partition("=")
            if equals and option in CONNECTION_OPTIONS:
                value = rest
        if value:
            connection = value
        module = argv[i + 1] if arg == "-m" and i + 1 < len(argv) else arg[2:]
        if (arg.startswith("-m") and module in LAUNCHER_MODULES) or (
            os.path.basename(arg) in LAUNCHER_FILES
        ):
            launcher = True
    kernel_id = None
    if connection is not None:
        match = CONNECTION_FILE.match(os.path.basename(connection))
        kernel_id = match.group("id") if match else None
    return KernelArgs(launcher or kernel_id is not None, kernel_id, connection)


class JupyterKernels:
    """Names other processes that are Jupyter kernels by their notebooks.

    ``runtime_dirs``: where the servers' runtime files are (default: Jupyter's runtime
    directory and ``$JUPYTER_RUNTIME_DIR``); the directories of the kernels' own connection
    files are looked in too (a server keeps its kernels' files in its runtime directory).
    ``refresh_every``: seconds between two fetches of the servers' sessions, at least.
    ``timeout``: seconds each request to a server may take.
    """

    def __init__(
        self,
        runtime_dirs: Sequence[str] | None = None,
        refresh_every: float = 30.0,
        timeout: float = 1.0,
    ) -> None:
        self.runtime_dirs = list(runtime_dirs) if runtime_dirs is not None else None
        self.refresh_every = refresh_every
        self.timeout = timeout
        self._sessions: dict[str, SessionFacts] = {}
        self._fetched: float | None = None  # monotonic time of the last fetch's end
        self._started = float("-inf")  # monotonic time the last fetch began
        self._learned: dict[str, None] = {}  # directories of kernels' connection files
        self._lock = threading.Lock()
        self._running = False
        self._closed = False
        self._generation = 0  # a fetch's answer counts only in the generation it began in
        self._pid = os.getpid()

    @property
    def fetching(self) -> bool:
        """Whether a fetch of the servers' sessions is under way (in this process)."""
        self._check_fork()
        return self._running

    def identify(
        self, pid: int, argv: Sequence[str], environ: Mapping[str, str]
    ) -> KernelIdentity | None:
        """Process ``pid`` as a Jupyter kernel, from its command line ``argv`` and environment
        ``environ`` (the caller's reads of /proc); None when it is not a kernel. Answers from
        the sessions fetched so far, at once; starts a fetch when this kernel's are not known
        or are older than ``refresh_every`` seconds."""
        args = kernel_args(argv)
        if not args.is_kernel:
            return None
        self._check_fork()
        now = time.monotonic()
        start = False
        with self._lock:
            if args.connection_file is not None:
                self._learn(os.path.dirname(os.path.abspath(args.connection_file)))
            facts = self._sessions.get(args.kernel_id) if args.kernel_id is not None else None
            stale = self._fetched is None or now - self._fetched >= self.refresh_every
            if args.kernel_id is not None and (facts is None or stale):
                start = self._claim_fetch(now)
            generation = self._generation
            learned = list(self._learned)
        if start:
            self._start_fetch(generation, learned)
        return _identity(args.kernel_id, facts, environ.get("JPY_SESSION_NAME") or None)

    def close(self) -> None:
        """No more fetches; a fetch under way is not waited for and its answer is dropped.
        identify() still answers from what was fetched before. Idempotent."""
        self._check_fork()
        with self._lock:
            self._closed = True
            self._running = False
            self._generation += 1

    # -- the fetch, on its own thread ---------------------------------------------------------

    def _claim_fetch(self, now: float) -> bool:
        """With the lock held: whether this caller starts the next fetch (none under way, the
        last began ``refresh_every`` s ago or more, not closed)."""
        if self._closed or self._running or now - self._started < self.refresh_every:
            return False
        self._running = True
        self._started = now
        return True

    def _start_fetch(self, generation: int, learned: list[str]) -> None:
        worker = threading.Thread(
            target=self._fetch,
            args=(generation, learned),
            name="nbgpumon-jupyter-sessions",
            daemon=True,
        )
        try:
            worker.start()
        except RuntimeError:  # no thread to be had now: the next call tries again
            with self._lock:
                if generation == self._generation:
                    self._running = False

    def _fetch(self, generation: int, learned: list[str]) -> None:
        sessions: dict[str, SessionFacts] | None = None
        try:
            given = self.runtime_dirs
            dirs = [*(given if given is not None else default_runtime_dirs()), *learned]
            sessions = fetch_sessions(dirs, self.timeout)
        except Exception:  # never a traceback from this thread; the next fetch tries again
            sessions = None
        finally:
            with self._lock:
                if generation == self._generation:  # not closed, not a forked child's
                    self._running = False
                    if sessions is not None:
                        self._sessions = sessions
                        self._fetched = time.monotonic()

    def _learn(self, directory: str) -> None:
        if directory in self._learned:
            return
        if len(self._learned) >= LEARNED_DIRS:
            del self._learned[next(iter(self._learned))]
        self._learned[directory] = None

    def _check_fork(self) -> None:
        """In a forked child no fetch runs and the lock may have been held at the fork: a
        fresh lock, nothing under way, and answers begun in the parent dropped."""
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._running = False
        self._generation += 1
        self._started = float("-inf")


def _identity(
    kernel_id: str | None, facts: SessionFacts | None, session_name: str | None
) -> KernelIdentity:
    if facts is None:
        return KernelIdentity(kernel_id, session_name, None, None)
    idle = None
    if facts.execution_state == "idle" and facts.last_activity is not None:
        idle = max(0.0, time.time() - facts.last_activity)
    notebook = facts.path or facts.name or session_name
    return KernelIdentity(kernel_id, notebook, idle, facts.execution_state)
