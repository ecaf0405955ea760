"""A bounded, columnar, multi-resolution store of samples.

Recent samples are kept raw in a ring; as time passes they are folded into coarser rings of
buckets holding min / max / mean per column (1 s, 10 s, 1 min by default). Every ring has a
fixed capacity, so memory is fixed once the first row arrives however long the kernel lives.
One writer (the sampler) appends; readers ask for "what's new since cursor N" or for a time
window, which is stitched from the finest ring that still holds each part of it.

Writing needs no numpy: the rings (rings.py) are ``array.array`` buffers, built by the
sampler's thread before its first tick (``prepare``). Readers that want arrays (``since``,
``window``, ``column_stats``) get numpy copies from ring_arrays.py, which imports numpy on the
reader's thread, the first time one asks; the cursor, the latest row and the trackers need none.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from .._foundation.windows import Chunk, Window
from .rings import RingStore

__all__ = ["DEFAULT_LEVELS", "MAX_TRACKERS", "Chunk", "RunningStats", "Timeline", "Window"]

DEFAULT_LEVELS = ((1.0, 7200), (10.0, 8640), (60.0, 10080))  # (bucket seconds, buckets kept)


class RunningStats:
    """Mean and max of some columns over the rows stamped from ``since`` to ``until``, kept as
    running sums while rows arrive. Reading them costs the same after an hour-long cell as after
    a one-second one (:meth:`Timeline.track`)."""

    __slots__ = ("_count", "_index", "_max", "_sum", "columns", "since", "until", "wanted")

    def __init__(
        self, wanted: Sequence[str], columns: Sequence[str], index: Sequence[int], since: float
    ) -> None:
        self.wanted = tuple(wanted)  # as asked for, unknown columns included
        self.columns = tuple(columns)  # those the timeline has, at ``index``
        self.since = since
        self.until = math.inf  # rows stamped later are not counted (a measurement's end)
        self._index = tuple(index)
        self._sum = [0.0] * len(self._index)
        self._count = [0] * len(self._index)
        self._max = [-math.inf] * len(self._index)

    def add(self, t: float, row: Sequence[float | None]) -> None:
        if t < self.since or t > self.until:
            return
        total, count, top = self._sum, self._count, self._max
        for k, i in enumerate(self._index):
            v = row[i]
            if v is None or v != v:  # missing, or NaN
                continue
            total[k] += v
            count[k] += 1
            if v > top[k]:
                top[k] = v

    def result(self) -> dict[str, tuple[float, float] | None]:
        """{column: (mean, max)}, None for a column with no value in the rows seen (or one
        the timeline lacks); the same shape as :meth:`Timeline.column_stats`."""
        out: dict[str, tuple[float, float] | None] = dict.fromkeys(self.wanted)
        for k, c in enumerate(self.columns):
            if self._count[k]:
                out[c] = (self._sum[k] / self._count[k], self._max[k])
        return out


MAX_TRACKERS = 64  # open trackers at most: one a cell or region and a few columns each


class Timeline:
    """Columnar samples with bounded memory; thread-safe for one writer and many readers."""

    def __init__(
        self,
        columns: Sequence[str],
        raw_capacity: int = 8192,
        levels: Sequence[tuple[float, int]] = DEFAULT_LEVELS,
    ) -> None:
        self.columns = tuple(columns)
        self._col = {name: i for i, name in enumerate(self.columns)}
        self._raw_capacity = raw_capacity
        self._level_spec = tuple(levels)
        self._store: RingStore | None = None  # built by the first row or reader (_rings)
        self._trackers: list[RunningStats] = []
        self._lock = threading.Lock()
        # the newest row as its writer gave it (exact: the rings keep float32), and its time
        self._newest: tuple[float, Sequence[float | None]] | None = None

    def prepare(self) -> None:
        """Build the rings now (a few MB of buffers): the sampler's thread does, before its
        first tick, so that ``%load_ext`` does not wait for it and no cell is charged it."""
        self._rings()

    def _rings(self) -> RingStore:
        """The rings, built the first time anything needs them."""
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None:
                self._store = RingStore(len(self.columns), self._raw_capacity, self._level_spec)
            return self._store

    # -- writing --------------------------------------------------------------------------
    def append(self, t: float, values: Sequence[float | None]) -> int:
        """Add one sample at unix time ``t``; ``None`` means missing. Returns the new cursor."""
        store = self._store or self._rings()
        with self._lock:
            for tracker in self._trackers:
                tracker.add(t, values)
            self._newest = (t, values)
            return store.append(t, values)

    def newest_values(self, columns: Sequence[str]) -> tuple[float, list[float | None]] | None:
        """The newest row's values of ``columns`` as its writer gave them (None for a column it
        lacks), and that row's unix time; None before the first row. No lock: a writer that
        updates its row in place after appending it gives values at least that new."""
        newest = self._newest
        if newest is None:
            return None
        t, row = newest
        at, width = self._col, len(row)
        return t, [row[i] if (i := at.get(c, width)) < width else None for c in columns]

    def add_columns(self, names: Sequence[str]) -> None:
        """Append columns (missing in every row so far); names it already has are skipped.

        For the cluster timeline, whose columns grow as nodes answer: it copies every ring
        once, so it is for rare growth, not for every row.
        """
        with self._lock:
            new = [n for n in dict.fromkeys(names) if n not in self._col]
            if not new:
                return
            self.columns = (*self.columns, *new)
            self._col = {name: i for i, name in enumerate(self.columns)}
            if self._store is not None:
                self._store.widen(len(self.columns))

    def track(self, columns: Sequence[str], since: float) -> RunningStats:
        """Running mean and max of ``columns`` (unknown ones: None) over the rows from unix
        time ``since`` on, including those already appended, until :meth:`untrack`."""
        return self.track_each([(columns, since)])[0]

    def track_each(self, asked: Sequence[tuple[Sequence[str], float]]) -> list[RunningStats]:
        """:meth:`track` for each ``(columns, since)`` of ``asked``, under one lock (a cell's
        start asks for two)."""
        col = self._col
        trackers = [
            RunningStats(columns, known, [col[c] for c in known], since)
            for columns, since in asked
            for known in ([c for c in columns if c in col],)
        ]
        since = min((r.since for r in trackers), default=0.0)
        with self._lock:
            newest = self._newest
            if (
                self._store is not None  # (none yet: no row to go back over)
                and trackers
                and newest is not None
                and newest[0] >= since
            ):
                # rows a sample taken before ``since`` was called may have added
                for t, row in self._store.raw_rows_from(since):
                    for tracker in trackers:
                        tracker.add(t, row)
            self._trackers += trackers
            del self._trackers[:-MAX_TRACKERS]  # a measurement never closed is let go
        return trackers

    def resume(self, tracker: RunningStats, since: float) -> None:
        """Count ``tracker`` (made by :meth:`track` with ``since`` infinite: paused, no row
        counted) from unix time ``since`` on, the rows already appended from then included."""
        with self._lock:
            tracker.since = since
            newest = self._newest
            if self._store is not None and newest is not None and newest[0] >= since:
                for t, row in self._store.raw_rows_from(since):
                    tracker.add(t, row)
            if tracker not in self._trackers:  # (let go while paused: MAX_TRACKERS)
                self._trackers.append(tracker)

    def untrack(self, tracker: RunningStats) -> dict[str, tuple[float, float] | None]:
        """Stop ``tracker`` and return what it saw (:meth:`RunningStats.result`)."""
        with self._lock:
            if tracker in self._trackers:
                self._trackers.remove(tracker)
            return tracker.result()

    # -- reading --------------------------------------------------------------------------
    @property
    def cursor(self) -> int:
        """Number of samples ever appended; pass it to :meth:`since` later."""
        store = self._store
        return 0 if store is None else store.raw.count

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        """Raw samples appended after ``cursor`` (oldest first, at most ``limit``)."""
        from . import ring_arrays  # numpy: on the reader's thread, when first asked

        store = self._rings()
        with self._lock:
            return ring_arrays.since(store, cursor, limit)

    def latest(self) -> dict[str, float] | None:
        """The newest sample as {column: value} plus ``"time"``; None when empty."""
        store = self._store
        if store is None:
            return None
        with self._lock:
            newest = store.latest()
            if newest is None:
                return None
            t, row = newest
            out = dict(zip(self.columns, row, strict=True))
        out["time"] = t
        return out

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        """Samples in ``[t0, t1]``, stitched from the finest ring holding each part.

        ``columns`` limits the copy to those columns (in that order); default all.
        """
        from . import ring_arrays

        store = self._rings()
        picked = None if columns is None else [self._col[c] for c in columns]
        width = len(self.columns) if picked is None else len(picked)
        with self._lock:
            return ring_arrays.window(store, t0, t1, picked, width)

    def column_stats(
        self, columns: Sequence[str], t0: float, t1: float
    ) -> dict[str, tuple[float, float] | None]:
        """{column: (mean, max)} over ``[t0, t1]``; None for a column with no value there.

        Unknown columns are None too. One window read serves all the columns.
        """
        from .ring_arrays import mean_and_max

        known = [c for c in columns if c in self._col]
        out: dict[str, tuple[float, float] | None] = dict.fromkeys(columns)
        if not known:
            return out
        w = self.window(t0, t1, columns=known)
        for k, name in enumerate(known):
            out[name] = mean_and_max(w, k)
        return out

    def nbytes(self) -> int:
        """Bytes the rings hold (fixed once built; building them is what this asks for)."""
        return self._rings().nbytes()

    # -- fork safety ----------------------------------------------------------------------
    def _lock_for_fork(self) -> None:
        self._lock.acquire()

    def _unlock_after_fork(self, child: bool) -> None:
        if child:
            self._lock = threading.Lock()  # the parent's holder does not exist here
        else:
            self._lock.release()
