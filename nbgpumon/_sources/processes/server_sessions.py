"""The running Jupyter servers of this machine and their sessions: which notebook each kernel
runs, and whether it is busy or since when it has been idle.

A server says it runs in a runtime file (``jpserver-<pid>.json`` from Jupyter Server 2,
``nbserver-<pid>.json`` from the classic Notebook server): its URL, token and PID. Its sessions
come from ``GET {url}api/sessions`` with that token. This module blocks for as long as the
servers take to answer (each request bounded by a timeout); callers run it off the main thread.

Nothing here raises or prints: a file that vanished or is half written, a dead server, a refused
connection, a 403 or a timeout are a server skipped. A token is only ever sent to a loopback
address, directly (no proxy, no redirect): never off the machine.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

RUNTIME_FILE = re.compile(r"^(?:jpserver|nbserver)-.+\.json$")
RUNTIME_FILE_LIMIT = 1 << 16  # bytes: a runtime file is a few hundred
ANSWER_LIMIT = 8 << 20  # bytes of one server's session list read at most
FILES_PER_DIR = 64  # runtime files read per directory at most (stale ones pile up)
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})
# A server listening on every address writes the machine's host name in its URL; its own
# "hostname" field keeps the wildcard. Such a server answers on loopback too (Tornado binds
# "::" as IPv6 only, hence ::1 for it).
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "*": "127.0.0.1"}


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """One session of a running Jupyter server, as its ``/api/sessions`` says."""

    kernel_id: str
    path: str | None  # the notebook's path relative to the server's root ("work/a.ipynb")
    name: str | None  # the session's name (JupyterLab gives the file name)
    type: str | None  # "notebook", "console", "file"
    last_activity: float | None  # the kernel's last message, seconds since the epoch
    execution_state: str | None  # "idle", "busy", "starting", "dead"... as the server says
    server: str  # the URL its sessions were fetched from


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A server found in a runtime file, alive, that may be asked on loopback."""

    sessions_url: str  # {url}api/sessions, its host a loopback address
    token: str
    pid: int
    source: str  # the runtime file


def default_runtime_dirs() -> list[str]:
    """Jupyter's runtime directory (``jupyter_core``'s idea of it, when importable) and
    ``$JUPYTER_RUNTIME_DIR``, each once."""
    dirs: list[str] = []
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        dirs.append(jupyter_runtime_dir())
    except Exception:  # absent, or a broken install: the variable below still counts
        pass
    env_dir = os.environ.get("JUPYTER_RUNTIME_DIR")
    if env_dir:
        dirs.append(env_dir)
    return _unique(dirs)


def running_servers(runtime_dirs: Iterable[str]) -> list[RunningServer]:
    """The servers that runtime files in ``runtime_dirs`` name, whose PID is alive and whose URL is
    on loopback (or a wildcard address, asked on loopback). Each URL and token comes once (a stale
    file naming a reused port with an old token does not hide the live one)."""
    found: dict[tuple[str, str], RunningServer] = {}
    for directory in _unique(runtime_dirs):
        for path in _runtime_files(directory):
            server = _server_from_file(path)
            if server is not None:
                found.setdefault((server.sessions_url, server.token), server)
    return list(found.values())


def fetch_sessions(runtime_dirs: Iterable[str], timeout: float = 1.0) -> dict[str, SessionFacts]:
    """Every session of every running server found in ``runtime_dirs``, by kernel id. Each
    server is asked once, each request bounded by ``timeout`` seconds; one that fails is left
    out. Never raises."""
    sessions: dict[str, SessionFacts] = {}
    try:
        servers = running_servers(runtime_dirs)
    except Exception:
        return sessions
    for server in servers:
        try:
            answer = _get_json(server.sessions_url, server.token, timeout)
        except Exception:
            continue
        for facts in parse_sessions(answer, server.sessions_url):
            sessions.setdefault(facts.kernel_id, facts)
    return sessions


def parse_sessions(answer: object, server: str = "") -> Iterator[SessionFacts]:
    """The sessions in an ``/api/sessions`` answer (a JSON list); what is not a session with a
    kernel id is skipped."""
    if not isinstance(answer, list):
        return
    for session in answer:
        if not isinstance(session, Mapping):
            continue
        kernel = session.get("kernel")
        if not isinstance(kernel, Mapping) or not isinstance(kernel.get("id"), str):
            continue
        path = _text(session.get("path"))
        notebook = session.get("notebook")
        if path is None and isinstance(notebook, Mapping):
            path = _text(notebook.get("path"))  # the classic server's, before "path" moved up
        yield SessionFacts(
            kernel_id=kernel["id"],
            path=path,
            name=_text(session.get("name")),
            type=_text(session.get("type")),
            last_activity=parse_time(kernel.get("last_activity")),
            execution_state=_text(kernel.get("execution_state")),
            server=server,
        )


def parse_time(text: object) -> float | None:
    """Seconds since the epoch from a server's ISO 8601 time ("2026-01-02T03:04:05.678Z"; one
    without a zone is UTC); None when it is not one."""
    if not isinstance(text, str) or not text:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"  # fromisoformat takes "Z" only from Python 3.11
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def loopback_url(url: str, hostname: object = None) -> str | None:
    """``url`` when its host is a loopback address or name; the same URL on loopback when the
    runtime file's ``hostname`` is a wildcard address; else None (never asked)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None  # http+unix (a socket file) is not supported
    if _is_loopback(host):
        return url
    if isinstance(hostname, str) and hostname in WILDCARDS:
        netloc = WILDCARDS[hostname] + (f":{port}" if port is not None else "")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# -- the pieces ------------------------------------------------------------------------------


def _runtime_files(directory: str) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if RUNTIME_FILE.match(e.name)]
    except OSError:
        return []
    # the newest first: a directory full of stale files still yields the live servers
    paths = [Path(directory, name) for name in names]
    paths.sort(key=_mtime, reverse=True)
    return paths[:FILES_PER_DIR]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _server_from_file(path: Path) -> RunningServer | None:
    try:
        with open(path, "rb") as f:
            info = json.loads(f.read(RUNTIME_FILE_LIMIT))
    except (OSError, ValueError):
        return None  # gone, unreadable, or still being written
    if not isinstance(info, dict):
        return None
    pid, url, token = info.get("pid"), info.get("url"), info.get("token", "")
    if not isinstance(pid, int) or isinstance(pid, bool) or not pid_alive(pid):
        return None
    if not isinstance(url, str) or not isinstance(token, str):
        return None
    base = loopback_url(url, info.get("hostname"))
    if base is None:
        return None
    if not base.endswith("/"):
        base += "/"
    return RunningServer(sessions_url=base + "api/sessions", token=token, pid=pid, source=str(path))


_OPENER: list = []  # built at the first fetch: urllib.request is not imported at load


def _opener():
    """An opener with no proxy (a proxy from the environment would see the token) and no
    redirects (a redirect would carry the token to wherever it points)."""
    if not _OPENER:
        import urllib.request

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None  # refused: an HTTPError

        _OPENER.append(urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect()))
    return _OPENER[0]


def _get_json(url: str, token: str, timeout: float) -> object:
    """The JSON answer of GET ``url``; raises on any failure or an answer that takes longer
    than ``timeout`` seconds in all or is larger than :data:`ANSWER_LIMIT`."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"token {token}"
    import urllib.request

    request = urllib.request.Request(url, headers=headers, method="GET")
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    with contextlib.closing(_opener().open(request, timeout=timeout)) as answer:
        while True:
            chunk = answer.read(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > ANSWER_LIMIT or time.monotonic() > deadline:
                raise OSError("answer too large or too slow")
            chunks.append(chunk)
    return json.loads(b"".join(chunks))


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item:
            seen.setdefault(os.path.normpath(item), None)
    return list(seen)
