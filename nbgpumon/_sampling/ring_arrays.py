"""The rings read as numpy arrays: rows by cursor, a time window stitched from the finest ring
holding each part, a column's mean and max over a window.

The only part of the timeline that imports numpy, on the thread of whoever reads (a view, the
recorder); the sampler's writes (rings.py) need none. The arrays returned are copies: a
ring's buffer is reused as it wraps.
"""

from __future__ import annotations

import math

import numpy as np

from .._foundation.windows import Chunk, Window
from .rings import Ring, RingStore, first_at_or_after


def values(ring: Ring, name: str) -> np.ndarray:
    """Ring ``name`` (mean, low or high) as a (capacity, width) float32 view of its buffer."""
    return np.frombuffer(getattr(ring, name), dtype=np.float32).reshape(ring.capacity, ring.width)


def rows(
    ring: Ring, start: int, end: int, columns: list[int] | None = None
) -> tuple[np.ndarray, ...]:
    """Rows ``[start, end)`` by cursor as (times, mean, low, high), copying only ``columns``
    (default all); a raw ring's low and high are its mean."""
    idx = np.arange(start, end) % ring.capacity
    pick = idx if columns is None else np.ix_(idx, columns)
    mean = values(ring, "mean")[pick]
    low = values(ring, "low")[pick] if ring.low is not None else mean
    high = values(ring, "high")[pick] if ring.high is not None else mean
    return np.frombuffer(ring.times, dtype=np.float64)[idx], mean, low, high


def since(store: RingStore, cursor: int, limit: int | None) -> Chunk:
    raw = store.raw
    start = max(cursor, raw.first)
    end = raw.count if limit is None else min(raw.count, start + limit)
    times, mean, *_ = rows(raw, start, end)
    return Chunk(start, end, times, mean, gap=start > cursor)


def window(store: RingStore, t0: float, t1: float, picked: list[int] | None, width: int) -> Window:
    parts: list[tuple[np.ndarray, ...]] = []
    # Walk finest to coarsest; each coarser ring fills in what precedes the finer one,
    # with whole buckets only: a bucket is stamped with its start, and one that runs into
    # the finer ring's range would show those samples again, and too early.
    limit = math.inf  # the oldest time a finer ring covers
    seconds = (0.0, *store.bucket_seconds)
    for ring, bucket in zip((store.raw, *store.levels), seconds, strict=True):
        if ring.count == 0:
            continue
        last_start = min(t1, limit - bucket)
        if last_start < t0:
            break
        start = first_at_or_after(ring, t0)
        end = first_at_or_after(ring, last_start, strictly_after=True)
        if end > start:
            parts.append(rows(ring, start, end, picked))
        limit = min(limit, ring.oldest_time())
    return stitch(parts, width)


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
