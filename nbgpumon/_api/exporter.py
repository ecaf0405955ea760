"""The exporter's HTTP server: a session's collector served for Prometheus on (host, port).

Started only when the user asks (``%gpumon export``, ``GPUMon.export_port``,
``nbgpumon.serve()``, ``python -m nbgpumon serve``), on 127.0.0.1 unless told otherwise.
prometheus_client's server runs in its own daemon thread (one more per request); stopping it
shuts the loop down, closes the socket and joins the thread, so the port is free at once.
Nothing it does prints: a failed request is counted, never a traceback in a cell's output.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import weakref
from collections.abc import Mapping
from typing import Any

from .._foundation.errors import UsageError
from .._session.facts.status import ExporterFacts

DEFAULT_PORT = 9476
DEFAULT_HOST = "127.0.0.1"
THREAD_NAME = "nbgpumon-exporter"


class Exporter:
    """One running HTTP server for ``collector`` (a
    :class:`~nbgpumon._api.exporter_families.SessionCollector`). ``retry`` says, in the
    caller's words, how to pick another port (it ends the line of a port in use)."""

    def __init__(self, collector: Any, host: str, port: int, retry: str) -> None:
        from prometheus_client import start_http_server

        check_port(port)
        self.collector, self.host, self.port = collector, host, port
        self.failed_requests = 0
        try:
            self._server, self._thread = start_http_server(
                port, addr=host, registry=collector.registry
            )
        except OverflowError:  # a port the socket layer refuses
            raise UsageError(_port_range(port)) from None
        except OSError as exc:
            raise UsageError(_bind_problem(exc, host, port, retry)) from None
        self._thread.name = THREAD_NAME
        # socketserver prints a request's traceback to stderr, which a kernel shows in
        # whichever cell is running: count it instead (a client that hangs up, a bad request)
        self._server.handle_error = self._request_failed
        _live.add(self)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    @property
    def running(self) -> bool:
        return self._server is not None

    def facts(self) -> ExporterFacts:
        """Where the exporter serves and what it has served (worded by the views)."""
        collector = self.collector
        return ExporterFacts(
            self.url, collector.scrapes, self.failed_requests, collector.error or ""
        )

    def stop(self) -> None:
        """Stop serving: the port is free when this returns."""
        server, self._server = self._server, None
        if server is None:
            return
        _live.discard(self)
        server.shutdown()  # the loop notices within its poll interval (0.5 s)
        server.server_close()
        self._thread.join(timeout=5)

    def _request_failed(self, request: Any, client_address: Any) -> None:
        self.failed_requests += 1

    def _forget_in_child(self) -> None:
        # A forked child (a DataLoader worker) has the listening socket but no server
        # thread: close its copy, so the port is free once the parent stops; never shut the
        # loop down here (it would wait for a thread that does not exist).
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.socket.close()


def check_port(port: int) -> None:
    """Refuse a port outside 1..65535 (0, "off", is the caller's to handle)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise UsageError(_port_range(port))


def rank_port(port: int, environ: Mapping[str, str] = os.environ) -> tuple[int, str]:
    """The port for this process of a job: ``port + LOCAL_RANK`` when LOCAL_RANK is set
    (torchrun sets it; ranks on one node each serve their own port), with a note saying so."""
    local = environ.get("LOCAL_RANK", "").strip()
    if not local.isdigit():
        return port, ""
    offset = int(local)
    return port + offset, f"{port} + LOCAL_RANK {offset}"


def process_rank(environ: Mapping[str, str] = os.environ) -> str | None:
    """The RANK of a distributed job's process (torchrun sets it), or None."""
    return environ.get("RANK", "").strip() or None


def _port_range(port: object) -> str:
    return f"the exporter's port is a number from 1 to 65535, not {port!r}; e.g. {DEFAULT_PORT}"


def _bind_problem(exc: OSError, host: str, port: int, retry: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use (another exporter?); {retry}"
    if exc.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges this process lacks; {retry}"
    if isinstance(exc, socket.gaierror):
        return (
            f"cannot listen on host {host!r} ({exc.strerror or exc}); GPUMon.export_host is "
            f"an address of this machine, e.g. '127.0.0.1' or '0.0.0.0' (every interface)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {host}: it is not an address of this machine; GPUMon.export_host "
            f"is one of its addresses, e.g. '127.0.0.1' or '0.0.0.0' (every interface)"
        )
    return f"cannot listen on {host} port {port} ({exc.strerror or exc}); {retry}"


_live: weakref.WeakSet[Exporter] = weakref.WeakSet()


def _after_fork_child() -> None:
    for exporter in list(_live):
        exporter._forget_in_child()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)
