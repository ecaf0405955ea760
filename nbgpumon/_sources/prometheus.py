"""Other nodes' GPUs, read from a Prometheus server: the cluster source.

It asks the server for the DCGM exporter's GPU metrics and for those of nbgpumon's own
exporter (``cluster_series``), narrowed by the user's label matchers, in a worker thread of
its own: first a range query for the recent past (so the chart has history at once), then an
instant query every scrape interval (or slower; faster would only read the same samples
again). Every request has a timeout. The sampler takes what the worker fetched since its last
tick (:meth:`PrometheusSource.take`) and never waits for the network, so a slow, dead or
wrong server is a status line, never a stalled tick.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque

from .base import NodeReading, RemotePhase, RemoteState
from .cluster_series import SERIES_NAMES, reading_from, readings_over_time
from .prometheus_http import PrometheusClient, PrometheusError, shown_url

DEFAULT_INTERVAL = 15.0  # seconds, when the server does not say how often it scrapes
MIN_INTERVAL = 1.0
BACKFILL = 1800.0  # seconds of history asked for when reading starts
BACKFILL_POINTS = 720  # at most this many rows of it
RELEARN = 300.0  # seconds between asking the server its scrape interval again
ASKS = 3  # times it is asked in a row, while the server does not say
PENDING = 4096  # readings kept for the sampler at most (a stopped sampler takes none)

# One label matcher: name, operator, a double-quoted value (escapes allowed).
_MATCHER = re.compile(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*')


def check_match(match: str) -> str:
    """Label matchers as the user wrote them (``Hostname=~"node-1.*", job="dcgm"``), checked;
    ValueError says what a matcher looks like."""
    match = match.strip().strip(",").strip()
    if not match:
        return ""
    rest = match
    while rest:
        found = _MATCHER.match(rest)
        if found is None:
            raise ValueError(
                f"{match!r} is not a list of label matchers; write them as PromQL does, "
                'e.g. Hostname=~"node-1.*" or job="dcgm", separated by commas'
            )
        rest = rest[found.end() :]
        if rest and not rest.startswith(","):
            raise ValueError(f"label matchers are separated by commas: {match!r}")
        rest = rest[1:]
    return match


def check_label_name(name: str) -> str:
    """A label name as Prometheus allows them; ValueError otherwise."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"{name!r} is not a label name (letters, digits and _)")
    return name


def gpu_query(match: str = "") -> str:
    """The PromQL selector of every GPU series nbgpumon reads, narrowed by ``match``."""
    names = "|".join(SERIES_NAMES)
    return "{" + f'__name__=~"{names}"' + (f", {match}" if match else "") + "}"


class PrometheusSource:
    """Fetches a Prometheus server's GPU series in a worker; never raises, never blocks."""

    name = "prometheus"

    def __init__(
        self,
        url: str,
        match: str = "",
        interval: float = 0.0,
        timeout: float = 5.0,
        backfill: float = BACKFILL,
        host_label: str = "Hostname",
    ) -> None:
        self.client = PrometheusClient(url, timeout)  # ValueError for a bad URL
        self.url = shown_url(self.client.url)
        self.match = check_match(match)
        self.query = gpu_query(self.match)
        self.wanted_interval = interval  # 0: the server's scrape interval
        self.interval = max(interval, MIN_INTERVAL) if interval else DEFAULT_INTERVAL
        self.backfill = backfill
        self.host_label = check_label_name(host_label)
        self.answers = 0  # answers with GPU series
        self.failures = 0
        self.last_answer = 0.0  # unix seconds
        self.nodes = self.gpus = 0  # in the latest answer
        self._state = self._now(RemotePhase.CONNECTING)
        self._pending: deque[NodeReading] = deque(maxlen=PENDING)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._first = threading.Event()  # set once the first attempt has ended, either way
        self._thread: threading.Thread | None = None

    # -- what the sampler and views see ---------------------------------------------------
    @property
    def state(self) -> RemoteState:
        """What it is doing, as of its latest attempt (replaced whole: read from any thread)."""
        return self._state

    def take(self) -> list[NodeReading]:
        if not self._pending:  # most ticks: nothing new
            return []
        with self._lock:
            out = list(self._pending)
            self._pending.clear()
        return out

    def wait_first(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the first attempt to end; True when it has."""
        return self._first.wait(timeout)

    # -- the worker -----------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name="nbgpumon-prometheus", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the worker; a request in flight ends by its own timeout, unseen."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        self._state = self._now(RemotePhase.STOPPED)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self, stop: threading.Event) -> None:
        filled = False  # the recent past, once per start
        ask_at = -math.inf  # when to ask the server its scrape interval next
        misses = 0  # asked and not told (a server just started lists no target yet)
        while not stop.is_set():
            started = time.monotonic()
            try:
                if started >= ask_at:
                    told = self._learn_interval()
                    misses = 0 if told else misses + 1
                    if told or misses >= ASKS:  # then again in a while, not every answer
                        ask_at, misses = started + RELEARN, 0
                if not filled:
                    past = self._recent_past()
                    if stop.is_set():
                        return
                    self._put(past)
                    filled = True
                at, series = self.client.query(self.query)
                reading = reading_from(at, series, self.host_label)
                if stop.is_set():
                    return
                self._put([reading])
                self._answered(reading)
            except PrometheusError as exc:
                if stop.is_set():
                    return
                self.failures += 1
                self._state = self._now(RemotePhase.FAILED, error=str(exc))
            except Exception as exc:  # contained: the worker must outlive any one answer
                self.failures += 1
                self._state = self._now(RemotePhase.BROKE, error=f"{type(exc).__name__}: {exc}")
            self._first.set()
            # not told the scrape interval yet: ask again soon (a few times) rather than
            # waiting out the 15 s guess
            every = min(self.interval, MIN_INTERVAL) if misses else self.interval
            stop.wait(max(0.0, every - (time.monotonic() - started)))

    def _learn_interval(self) -> bool:
        """Ask the server how often it scrapes; True when it said."""
        scrape = self.client.scrape_interval()
        wanted = max(self.wanted_interval, MIN_INTERVAL) if self.wanted_interval else 0.0
        if scrape is None:  # the server does not say (or did not answer): as before
            self.interval = wanted or self.interval
            return False
        self.interval = max(scrape, wanted)  # never faster than the server scrapes
        return True

    def _recent_past(self) -> list[NodeReading]:
        if self.backfill <= 0:
            return []
        end = time.time()
        step = max(self.interval, self.backfill / BACKFILL_POINTS)
        series = self.client.query_range(self.query, end - self.backfill, end, step)
        return readings_over_time(series, self.host_label)

    def _put(self, readings: list[NodeReading]) -> None:
        with self._lock:
            self._pending.extend(readings)

    def _answered(self, reading: NodeReading) -> None:
        self.answers += 1
        self.last_answer = reading.time
        hosts = {host for host, _ in reading.gpus}
        self.nodes, self.gpus = len(hosts), len(reading.gpus)
        self._state = self._now(RemotePhase.ANSWERED if reading.gpus else RemotePhase.NO_SERIES)

    def _now(self, phase: RemotePhase, error: str = "") -> RemoteState:
        return RemoteState(phase, self.url, self.match, self.nodes, self.gpus, self.interval, error)
