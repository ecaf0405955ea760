"""A bounded, columnar, multi-resolution store of samples.

Recent samples are kept raw in a ring; as time passes they are folded into coarser rings of
buckets holding min / max / mean per column (1 s, 10 s, 1 min by default). Every ring has a
fixed capacity, so memory is fixed at construction however long the kernel lives. One writer
(the sampler) appends; readers ask for "what's new since cursor N" or for a time window, which
is stitched from the finest ring that still holds each part of it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_LEVELS = ((1.0, 7200), (10.0, 8640), (60.0, 10080))  # (bucket seconds, buckets kept)


@dataclass(frozen=True)
class Chunk:
    """Raw rows ``[start, end)`` by cursor. ``gap`` is True when rows were overwritten."""

    start: int
    end: int
    times: np.ndarray  # float64 unix seconds, shape (n,)
    values: np.ndarray  # float32, shape (n, columns); NaN where a value was missing
    gap: bool


@dataclass(frozen=True)
class Window:
    """Rows covering a time range, finest resolution available for each part.

    For raw rows ``low == mean == high``; for bucket rows they are the bucket's min, mean and
    max. ``times`` are sample times or bucket start times.
    """

    times: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def downsample(self, rows: int) -> Window:
        """At most ``rows`` rows, consecutive rows merged: min of lows, mean, max of highs."""
        n = len(self.times)
        if n <= rows:
            return self
        starts = np.linspace(0, n, rows + 1).astype(np.int64)[:-1]
        present = ~np.isnan(self.mean)
        total = np.add.reduceat(np.where(present, self.mean, 0.0), starts, axis=0)
        counted = np.add.reduceat(present, starts, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counted > 0, total / np.maximum(counted, 1), np.nan)
        return Window(
            times=self.times[starts],
            mean=mean.astype(np.float32),
            low=np.fmin.reduceat(self.low, starts, axis=0),
            high=np.fmax.reduceat(self.high, starts, axis=0),
        )


class _Ring:
    """Fixed-capacity rows of (time, mean, low, high, n); low/high omitted for raw."""

    def __init__(self, capacity: int, width: int, with_range: bool) -> None:
        self.capacity = capacity
        self.times = np.full(capacity, np.nan)
        self.mean = np.full((capacity, width), np.nan, dtype=np.float32)
        self.low = np.full((capacity, width), np.nan, dtype=np.float32) if with_range else None
        self.high = np.full((capacity, width), np.nan, dtype=np.float32) if with_range else None
        self.n = np.zeros(capacity, dtype=np.int32)
        self.count = 0  # rows ever written; the cursor

    @property
    def first(self) -> int:
        return max(0, self.count - self.capacity)

    def slots(self, start: int, end: int) -> np.ndarray:
        return np.arange(start, end) % self.capacity

    def oldest_time(self) -> float:
        return float(self.times[self.first % self.capacity]) if self.count else math.inf

    def rows(
        self, start: int, end: int, columns: list[int] | None = None
    ) -> tuple[np.ndarray, ...]:
        """Rows ``[start, end)`` by cursor, copying only ``columns`` (default all)."""
        idx = self.slots(start, end)
        pick = idx if columns is None else np.ix_(idx, columns)
        mean = self.mean[pick]
        low = self.low[pick] if self.low is not None else mean
        high = self.high[pick] if self.high is not None else mean
        return self.times[idx], mean, low, high, self.n[idx]

    def nbytes(self) -> int:
        arrays = [self.times, self.mean, self.n, self.low, self.high]
        return sum(a.nbytes for a in arrays if a is not None)

    def widen(self, width: int) -> None:
        """Make room for more columns, missing (NaN) in every row so far."""
        for name in ("mean", "low", "high"):
            old = getattr(self, name)
            if old is None:
                continue
            new = np.full((self.capacity, width), np.nan, dtype=np.float32)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)


def _first_at_or_after(ring: _Ring, t: float, strictly_after: bool = False) -> int:
    """Binary search over a ring's cursors (times ascend in cursor order)."""
    lo, hi = ring.first, ring.count
    while lo < hi:
        mid = (lo + hi) // 2
        value = ring.times[mid % ring.capacity]
        if value < t or (strictly_after and value == t):
            lo = mid + 1
        else:
            hi = mid
    return lo


class RunningStats:
    """Mean and max of some columns over the rows appended from ``since`` on, kept as running
    sums while rows arrive, so that reading them costs the same after an hour-long cell as
    after a one-second one (:meth:`Timeline.track`)."""

    __slots__ = ("_count", "_index", "_max", "_sum", "columns", "since", "wanted")

    def __init__(
        self, wanted: Sequence[str], columns: Sequence[str], index: Sequence[int], since: float
    ) -> None:
        self.wanted = tuple(wanted)  # as asked for, unknown columns included
        self.columns = tuple(columns)  # those the timeline has, at ``index``
        self.since = since
        self._index = tuple(index)
        self._sum = [0.0] * len(self._index)
        self._count = [0] * len(self._index)
        self._max = [-math.inf] * len(self._index)

    def add(self, t: float, row: Sequence[float | None]) -> None:
        if t < self.since:
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
        width = len(self.columns)
        self._raw = _Ring(raw_capacity, width, with_range=False)
        self._levels = [_Ring(capacity, width, with_range=True) for _, capacity in levels]
        self._bucket_seconds = [float(seconds) for seconds, _ in levels]
        # for each level: (bucket id being filled, first cursor of the finer ring in it)
        self._open: list[tuple[int, int] | None] = [None] * len(levels)
        self._trackers: list[RunningStats] = []
        self._lock = threading.Lock()

    # -- writing --------------------------------------------------------------------------
    def append(self, t: float, values: Sequence[float | None]) -> int:
        """Add one sample at unix time ``t``; ``None`` means missing. Returns the new cursor."""
        row = np.array(values, dtype=np.float64)  # None becomes NaN
        with self._lock:
            for tracker in self._trackers:
                tracker.add(t, values)
            raw = self._raw
            slot = raw.count % raw.capacity
            raw.times[slot] = t
            raw.mean[slot] = row
            raw.n[slot] = 1
            raw.count += 1
            self._fold(0, t, raw.count - 1)
            return raw.count

    def _fold(self, level: int, t: float, cursor: int) -> None:
        """Row ``cursor`` of the ring below ``level`` arrived at time ``t``: close buckets."""
        if level >= len(self._levels):
            return
        bucket = math.floor(t / self._bucket_seconds[level])
        current = self._open[level]
        if current is None:
            self._open[level] = (bucket, cursor)
            return
        open_bucket, start = current
        if bucket == open_bucket:
            return
        finer = self._raw if level == 0 else self._levels[level - 1]
        start = max(start, finer.first)
        if cursor > start:
            self._close(level, open_bucket, finer.rows(start, cursor))
        self._open[level] = (bucket, cursor)

    def _close(self, level: int, bucket: int, rows: tuple[np.ndarray, ...]) -> None:
        _, mean, low, high, n = rows
        weights = n.astype(np.float64)[:, None]
        present = ~np.isnan(mean)
        total = np.where(present, mean * weights, 0.0).sum(axis=0)
        counted = np.where(present, weights, 0.0).sum(axis=0)
        out = self._levels[level]
        slot = out.count % out.capacity
        start_time = bucket * self._bucket_seconds[level]
        out.times[slot] = start_time
        with np.errstate(invalid="ignore", divide="ignore"):
            out.mean[slot] = np.where(counted > 0, total / np.maximum(counted, 1), np.nan)
        out.low[slot] = np.fmin.reduce(low, axis=0)
        out.high[slot] = np.fmax.reduce(high, axis=0)
        out.n[slot] = int(n.sum())
        out.count += 1
        self._fold(level + 1, start_time, out.count - 1)

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
            for ring in (self._raw, *self._levels):
                ring.widen(len(self.columns))

    def track(self, columns: Sequence[str], since: float) -> RunningStats:
        """Running mean and max of ``columns`` (unknown ones: None) over the rows from unix
        time ``since`` on, including those already appended, until :meth:`untrack`."""
        known = [c for c in columns if c in self._col]
        tracker = RunningStats(columns, known, [self._col[c] for c in known], since)
        with self._lock:
            raw = self._raw
            back = raw.count
            while back > raw.first and raw.times[(back - 1) % raw.capacity] >= since:
                back -= 1  # rows a sample taken before ``since`` was called may have added
            for cursor in range(back, raw.count):
                slot = cursor % raw.capacity
                tracker.add(float(raw.times[slot]), raw.mean[slot].tolist())
            self._trackers.append(tracker)
            del self._trackers[:-MAX_TRACKERS]  # a measurement never closed is let go
        return tracker

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
        return self._raw.count

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        """Raw samples appended after ``cursor`` (oldest first, at most ``limit``)."""
        with self._lock:
            raw = self._raw
            start = max(cursor, raw.first)
            end = raw.count if limit is None else min(raw.count, start + limit)
            times, mean, *_ = raw.rows(start, end)
            return Chunk(start, end, times, mean, gap=start > cursor)

    def latest(self) -> dict[str, float] | None:
        """The newest sample as {column: value} plus ``"time"``; None when empty."""
        with self._lock:
            raw = self._raw
            if raw.count == 0:
                return None
            slot = (raw.count - 1) % raw.capacity
            out = dict(zip(self.columns, raw.mean[slot].tolist(), strict=True))
            out["time"] = float(raw.times[slot])
            return out

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        """Samples in ``[t0, t1]``, stitched from the finest ring holding each part.

        ``columns`` limits the copy to those columns (in that order); default all.
        """
        picked = None if columns is None else [self._col[c] for c in columns]
        width = len(self.columns) if picked is None else len(picked)
        parts: list[tuple[np.ndarray, ...]] = []
        with self._lock:
            # Walk finest to coarsest; each coarser ring fills in what precedes the finer one,
            # with whole buckets only: a bucket is stamped with its start, and one that runs
            # into the finer ring's range would show those samples again, and too early.
            limit = math.inf  # the oldest time a finer ring covers
            seconds = (0.0, *self._bucket_seconds)
            for ring, bucket in zip((self._raw, *self._levels), seconds, strict=True):
                if ring.count == 0:
                    continue
                last_start = min(t1, limit - bucket)
                if last_start < t0:
                    break
                start = _first_at_or_after(ring, t0)
                end = _first_at_or_after(ring, last_start, strictly_after=True)
                if end > start:
                    parts.append(ring.rows(start, end, picked)[:4])
                limit = min(limit, ring.oldest_time())
        if not parts:
            empty = np.empty((0, width), dtype=np.float32)
            return Window(np.empty(0), empty, empty, empty)
        parts.reverse()
        return Window(*(np.concatenate([p[k] for p in parts]) for k in range(4)))

    def column_stats(
        self, columns: Sequence[str], t0: float, t1: float
    ) -> dict[str, tuple[float, float] | None]:
        """{column: (mean, max)} over ``[t0, t1]``; None for a column with no value there.

        Unknown columns are None too. One window read serves all the columns.
        """
        known = [c for c in columns if c in self._col]
        out: dict[str, tuple[float, float] | None] = dict.fromkeys(columns)
        if not known:
            return out
        w = self.window(t0, t1, columns=known)
        for k, name in enumerate(known):
            mean, high = w.mean[:, k], w.high[:, k]
            present = ~np.isnan(mean)
            if present.any():
                out[name] = (float(mean[present].mean()), float(np.nanmax(high[present])))
        return out

    def nbytes(self) -> int:
        """Bytes held by the rings (fixed at construction)."""
        return self._raw.nbytes() + sum(level.nbytes() for level in self._levels)

    # -- fork safety ----------------------------------------------------------------------
    def _lock_for_fork(self) -> None:
        self._lock.acquire()

    def _unlock_after_fork(self, child: bool) -> None:
        if child:
            self._lock = threading.Lock()  # the parent's holder does not exist here
        else:
            self._lock.release()
