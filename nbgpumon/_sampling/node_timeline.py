"""The cluster's samples: other nodes' GPUs as a Prometheus server last reported them.

One row per answer (every scrape interval or slower, not every tick), columns
``node:{host}.{gpu}.{metric}`` that grow as nodes answer, up to a fixed number of GPUs, so
memory stays bounded however many nodes a server knows. Beside the numbers it keeps what the
labels said of each GPU (model, UUID, the pod using it) and when each host last answered.
The sampler is its one writer; views read it through the session's ``Cluster``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from .._foundation.metrics import node_of
from .._sources.base import NodeReading
from .timeline import Chunk, Timeline, Window

MAX_GPUS = 128  # remote GPUs kept; beyond them a server's answer is counted, not stored
# 12 h of rows at a 15 s scrape interval, then minutes for a day and 10 minutes for a week
CLUSTER_LEVELS = ((60.0, 1440), (600.0, 1008))
CLUSTER_RAW_ROWS = 2880


class NodeTimeline:
    """Bounded, growing-column store of remote samples; one writer, many readers."""

    def __init__(self, max_gpus: int = MAX_GPUS, raw_capacity: int = CLUSTER_RAW_ROWS) -> None:
        self.max_gpus = max_gpus
        self._timeline = Timeline([], raw_capacity=raw_capacity, levels=CLUSTER_LEVELS)
        self._lock = threading.Lock()
        self._gpus: dict[tuple[str, str], dict[str, str]] = {}
        self._last_seen: dict[str, float] = {}
        self.refused_gpus = 0  # GPUs in the latest answer left out for want of room
        self.version = 0  # grows when the columns do: a view that sent them sends them again

    # -- writing (the sampler) ------------------------------------------------------------
    def add(self, reading: NodeReading) -> None:
        """Append one answer; new GPUs get columns while there is room for them."""
        with self._lock:  # the sampler, and whoever stops a source and takes its last answers
            if self._timeline.cursor and reading.time <= self._last_time():
                return  # an answer no newer than one kept (a backfill that came late)
            refused = 0
            for key, labels in reading.gpus.items():
                if key not in self._gpus and len(self._gpus) >= self.max_gpus:
                    refused += 1
                    continue
                self._gpus[key] = dict(labels)
                self._last_seen[key[0]] = reading.time
            self.refused_gpus = refused
            known = set(self._timeline.columns)
            new = [c for c in reading.values if c not in known and node_of(c) in self._gpus]
            if new:
                self._timeline.add_columns(sorted(new))
                self.version += 1
            row = [reading.values.get(c) for c in self._timeline.columns]  # None: missing
            self._timeline.append(reading.time, row)

    def _last_time(self) -> float:
        latest = self._timeline.latest()
        return latest["time"] if latest else -math.inf

    # -- reading --------------------------------------------------------------------------
    @property
    def columns(self) -> tuple[str, ...]:
        return self._timeline.columns

    @property
    def cursor(self) -> int:
        return self._timeline.cursor

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        return self._timeline.since(cursor, limit)

    def since_with_columns(
        self, cursor: int, limit: int | None = None
    ) -> tuple[tuple[str, ...], Chunk]:
        """:meth:`since` with the columns its rows have (columns may grow meanwhile)."""
        with self._lock:
            return self._timeline.columns, self._timeline.since(cursor, limit)

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        return self._timeline.window(t0, t1, columns)

    def latest(self) -> dict[str, float] | None:
        return self._timeline.latest()

    def gpus(self) -> dict[tuple[str, str], dict[str, str]]:
        """(host, gpu) -> its labels, in the order they first answered."""
        with self._lock:
            return {key: dict(labels) for key, labels in self._gpus.items()}

    def last_seen(self) -> dict[str, float]:
        """host -> unix seconds of the latest answer that had it."""
        with self._lock:
            return dict(self._last_seen)

    def nbytes(self) -> int:
        return self._timeline.nbytes()

    # -- fork safety (the sampler's hooks take the timeline's lock) -----------------------
    def _lock_for_fork(self) -> None:
        self._lock.acquire()
        self._timeline._lock_for_fork()

    def _unlock_after_fork(self, child: bool) -> None:
        self._timeline._unlock_after_fork(child)
        if child:
            self._lock = threading.Lock()
        else:
            self._lock.release()
