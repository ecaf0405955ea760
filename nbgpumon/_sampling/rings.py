"""The timeline's storage: fixed-capacity numpy rings of rows, raw and bucketed, and the
arithmetic that folds rows into buckets and stitches a time window from the rings.

Not thread-safe on its own: :class:`~nbgpumon._sampling.timeline.Timeline` holds the lock and
builds a :class:`RingStore` on its first row, which is when numpy is first imported.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from .windows import Chunk, Window


class Ring:
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


def first_at_or_after(ring: Ring, t: float, strictly_after: bool = False) -> int:
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


class RingStore:
    """A raw ring and, above it, rings of ever coarser buckets (min / mean / max per column)."""

    def __init__(self, width: int, raw_capacity: int, levels: Sequence[tuple[float, int]]) -> None:
        self.raw = Ring(raw_capacity, width, with_range=False)
        self.levels = [Ring(capacity, width, with_range=True) for _, capacity in levels]
        self.bucket_seconds = [float(seconds) for seconds, _ in levels]
        # for each level: (bucket id being filled, first cursor of the finer ring in it)
        self.open: list[tuple[int, int] | None] = [None] * len(levels)

    def append(self, t: float, values: Sequence[float | None]) -> int:
        raw = self.raw
        slot = raw.count % raw.capacity
        raw.times[slot] = t
        raw.mean[slot] = np.array(values, dtype=np.float64)  # None becomes NaN
        raw.n[slot] = 1
        raw.count += 1
        self._fold(0, t, raw.count - 1)
        return raw.count

    def _fold(self, level: int, t: float, cursor: int) -> None:
        """Row ``cursor`` of the ring below ``level`` arrived at time ``t``: close buckets."""
        if level >= len(self.levels):
            return
        bucket = math.floor(t / self.bucket_seconds[level])
        current = self.open[level]
        if current is None:
            self.open[level] = (bucket, cursor)
            return
        open_bucket, start = current
        if bucket == open_bucket:
            return
        finer = self.raw if level == 0 else self.levels[level - 1]
        start = max(start, finer.first)
        if cursor > start:
            self._close(level, open_bucket, finer.rows(start, cursor))
        self.open[level] = (bucket, cursor)

    def _close(self, level: int, bucket: int, rows: tuple[np.ndarray, ...]) -> None:
        _, mean, low, high, n = rows
        weights = n.astype(np.float64)[:, None]
        present = ~np.isnan(mean)
        total = np.where(present, mean * weights, 0.0).sum(axis=0)
        counted = np.where(present, weights, 0.0).sum(axis=0)
        out = self.levels[level]
        slot = out.count % out.capacity
        start_time = bucket * self.bucket_seconds[level]
        out.times[slot] = start_time
        with np.errstate(invalid="ignore", divide="ignore"):
            out.mean[slot] = np.where(counted > 0, total / np.maximum(counted, 1), np.nan)
        out.low[slot] = np.fmin.reduce(low, axis=0)
        out.high[slot] = np.fmax.reduce(high, axis=0)
        out.n[slot] = int(n.sum())
        out.count += 1
        self._fold(level + 1, start_time, out.count - 1)

    def widen(self, width: int) -> None:
        for ring in (self.raw, *self.levels):
            ring.widen(width)

    def raw_rows_from(self, since: float) -> Iterator[tuple[float, list[float]]]:
        """The raw rows stamped ``since`` or later that the ring still holds, oldest first."""
        raw = self.raw
        back = raw.count
        while back > raw.first and raw.times[(back - 1) % raw.capacity] >= since:
            back -= 1
        for cursor in range(back, raw.count):
            slot = cursor % raw.capacity
            yield float(raw.times[slot]), raw.mean[slot].tolist()

    def since(self, cursor: int, limit: int | None) -> Chunk:
        raw = self.raw
        start = max(cursor, raw.first)
        end = raw.count if limit is None else min(raw.count, start + limit)
        times, mean, *_ = raw.rows(start, end)
        return Chunk(start, end, times, mean, gap=start > cursor)

    def latest(self) -> tuple[float, list[float]] | None:
        raw = self.raw
        if raw.count == 0:
            return None
        slot = (raw.count - 1) % raw.capacity
        return float(raw.times[slot]), raw.mean[slot].tolist()

    def window(self, t0: float, t1: float, picked: list[int] | None, width: int) -> Window:
        parts: list[tuple[np.ndarray, ...]] = []
        # Walk finest to coarsest; each coarser ring fills in what precedes the finer one,
        # with whole buckets only: a bucket is stamped with its start, and one that runs into
        # the finer ring's range would show those samples again, and too early.
        limit = math.inf  # the oldest time a finer ring covers
        seconds = (0.0, *self.bucket_seconds)
        for ring, bucket in zip((self.raw, *self.levels), seconds, strict=True):
            if ring.count == 0:
                continue
            last_start = min(t1, limit - bucket)
            if last_start < t0:
                break
            start = first_at_or_after(ring, t0)
            end = first_at_or_after(ring, last_start, strictly_after=True)
            if end > start:
                parts.append(ring.rows(start, end, picked)[:4])
            limit = min(limit, ring.oldest_time())
        return stitch(parts, width)

    def nbytes(self) -> int:
        return self.raw.nbytes() + sum(level.nbytes() for level in self.levels)


def stitch(parts: list[tuple[np.ndarray, ...]], width: int) -> Window:
    """One window of the (times, mean, low, high) parts, read finest first."""
    if not parts:
        empty = np.empty((0, width), dtype=np.float32)
        return Window(np.empty(0), empty, empty, empty)
    parts = parts[::-1]
    return Window(*(np.concatenate([p[k] for p in parts]) for k in range(4)))


def mean_and_max(window: Window, k: int) -> tuple[float, float] | None:
    """Column ``k``'s mean and max over ``window``; None when it has no value there."""
    mean, high = window.mean[:, k], window.high[:, k]
    present = ~np.isnan(mean)
    if not present.any():
        return None
    return float(mean[present].mean()), float(np.nanmax(high[present]))
