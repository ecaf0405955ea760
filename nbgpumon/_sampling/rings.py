"""The timeline's storage: fixed-capacity rings of rows, raw and bucketed, and the arithmetic
that folds rows into buckets.

The rings are ``array.array`` buffers (float64 times, float32 values, row-major), not numpy
arrays: a tick's row is one slice assignment, where a numpy row write cost the running
sampler more than its NVML reads (docs/benchmarks.md, issue 23), and nothing the sampler does
imports numpy, so neither ``%load_ext``, the cells after it nor a fork wait for that import.
Folding a second of rows into a bucket is a few C-level passes a column (sum, min, max),
or, in a process that has numpy loaded already (torch loads it), numpy_fold's arithmetic on
views of the same buffers, quicker at many columns.
Readers that want arrays view the same buffers through ``ring_arrays``, which imports numpy
on the reader's thread.

Not thread-safe on its own: :class:`~nbgpumon._sampling.timeline.Timeline` holds the lock.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from collections.abc import Iterator, Sequence

NAN = math.nan


def _floats(size: int) -> array:
    return array("f", [NAN]) * size


class Ring:
    """Fixed-capacity rows of (time, mean, low, high, n); raw rings keep no low, high or n
    (each of their rows is one sample)."""

    def __init__(self, capacity: int, width: int, with_range: bool) -> None:
        self.capacity = capacity
        self.width = width
        self.times = array("d", [NAN]) * capacity
        self.mean = _floats(capacity * width)
        self.low = _floats(capacity * width) if with_range else None
        self.high = _floats(capacity * width) if with_range else None
        self.n = array("i", [0]) * capacity if with_range else None
        self.count = 0  # rows ever written; the cursor

    @property
    def first(self) -> int:
        return max(0, self.count - self.capacity)

    def oldest_time(self) -> float:
        return self.times[self.first % self.capacity] if self.count else math.inf

    def row(self, cursor: int) -> list[float]:
        """Row ``cursor``'s means (NaN where missing)."""
        at = (cursor % self.capacity) * self.width
        return self.mean[at : at + self.width].tolist()

    def nbytes(self) -> int:
        arrays = [self.times, self.mean, self.n, self.low, self.high]
        return sum(len(a) * a.itemsize for a in arrays if a is not None)

    def widen(self, width: int) -> None:
        """Make room for more columns, missing (NaN) in every row so far."""
        old_width, rows = self.width, min(self.count, self.capacity)
        for name in ("mean", "low", "high"):
            old = getattr(self, name)
            if old is None:
                continue
            new = _floats(self.capacity * width)
            for slot in range(rows):
                new[slot * width : slot * width + old_width] = old[
                    slot * old_width : (slot + 1) * old_width
                ]
            setattr(self, name, new)
        self.width = width


def first_at_or_after(ring: Ring, t: float, strictly_after: bool = False) -> int:
    """Binary search over a ring's cursors (times ascend in cursor order)."""
    lo, hi = ring.first, ring.count
    times, capacity = ring.times, ring.capacity
    while lo < hi:
        mid = (lo + hi) // 2
        value = times[mid % capacity]
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
        self._open0: int | None = None  # the finest level's open bucket, checked every row

    def append(self, t: float, values: Sequence[float | None]) -> int:
        raw = self.raw
        width = raw.width
        if len(values) != width:  # (a slice of another length would resize the ring)
            raise ValueError(f"a row of {len(values)} values for {width} columns")
        slot = raw.count % raw.capacity
        raw.times[slot] = t
        raw.mean[slot * width : (slot + 1) * width] = array(
            "f", [NAN if v is None else v for v in values]
        )
        raw.count += 1
        if not _numpy_fold_warm:  # (no call a tick once done)
            warm_numpy_fold()
        if self.levels and math.floor(t / self.bucket_seconds[0]) != self._open0:
            self._fold(0, t, raw.count - 1)  # (about once a second: a bucket to close)
        return raw.count

    def _fold(self, level: int, t: float, cursor: int) -> None:
        """Row ``cursor`` of the ring below ``level`` arrived at time ``t``: close buckets."""
        if level >= len(self.levels):
            return
        bucket = math.floor(t / self.bucket_seconds[level])
        if level == 0:
            self._open0 = bucket
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
            self._close(level, open_bucket, finer, start, cursor)
        self.open[level] = (bucket, cursor)

    def _close(self, level: int, bucket: int, finer: Ring, start: int, end: int) -> None:
        """Rows ``[start, end)`` of ``finer`` become one bucket of ``self.levels[level]``."""
        width, capacity = finer.width, finer.capacity
        slots = [cursor % capacity for cursor in range(start, end)]
        if width and _numpy_loaded():  # (torch loads it): numpy's fold, faster at many columns
            from .numpy_fold import fold

            mean, low, high, count = fold(finer.mean, finer.low, finer.high, finer.n, width, slots)
            means, lows, highs = (
                array("f", a.astype("float32").tobytes()) for a in (mean, low, high)
            )
        else:
            means, lows, highs, count = _fold_rows(finer, slots)
        out = self.levels[level]
        slot = out.count % out.capacity
        start_time = bucket * self.bucket_seconds[level]
        at = slot * width
        out.times[slot] = start_time
        out.mean[at : at + width] = means
        out.low[at : at + width] = lows  # type: ignore[index]
        out.high[at : at + width] = highs  # type: ignore[index]
        out.n[slot] = count  # type: ignore[index]
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
            yield raw.times[cursor % raw.capacity], raw.row(cursor)

    def latest(self) -> tuple[float, list[float]] | None:
        raw = self.raw
        if raw.count == 0:
            return None
        return raw.times[(raw.count - 1) % raw.capacity], raw.row(raw.count - 1)

    def nbytes(self) -> int:
        return self.raw.nbytes() + sum(level.nbytes() for level in self.levels)


_numpy_fold_warm = False


def warm_numpy_fold() -> bool:
    """Once numpy is loaded, fold a tiny buffer with it, once. numpy's first fold grows the
    process by about 0.6 MiB (its lazy set-up, code pages touched): paid here, before a cell's
    start readings (the cell pipeline calls this) or at the next row, not at the first bucket to
    close with numpy, which can fall seconds later inside a cell whose host memory the ledger
    would charge with it. Costs one check a call once done; returns whether it is done."""
    global _numpy_fold_warm
    if _numpy_fold_warm or not _numpy_loaded():
        return _numpy_fold_warm
    _numpy_fold_warm = True
    from .numpy_fold import fold

    values, counts = array("f", [0.0, 1.0]), array("i", [1, 1])
    fold(values, None, None, None, 1, [0, 1])  # raw rows
    fold(values, values, values, counts, 1, [0, 1])  # buckets: their lows, highs and counts
    return True


def _numpy_loaded() -> bool:
    """numpy imported already and done importing (not mid-import in another thread, which
    this thread's import would wait for, holding the timeline's lock)."""
    module = sys.modules.get("numpy")
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def _fold_rows(finer: Ring, slots: list[int]) -> tuple[array, array, array, int]:
    """(mean, low, high, count) of rows ``slots`` of ``finer``, in plain Python: a column's
    values as one tuple (the rows' slices, transposed), then sum, min and max at C speed."""
    width = finer.width
    means = [finer.mean[s * width : (s + 1) * width] for s in slots]
    if finer.n is None:  # raw rows: one sample each
        summary = [_samples(column) for column in zip(*means, strict=True)]
        count = len(slots)
    else:
        weights = [finer.n[s] for s in slots]
        lows = [finer.low[s * width : (s + 1) * width] for s in slots]  # type: ignore[index]
        highs = [finer.high[s * width : (s + 1) * width] for s in slots]  # type: ignore[index]
        rotated = (zip(*rows, strict=True) for rows in (means, lows, highs))
        summary = [_buckets(m, lo, hi, weights) for m, lo, hi in zip(*rotated, strict=True)]
        count = sum(weights)
    return (*(array("f", [s[k] for s in summary]) for k in range(3)), count)  # type: ignore[return-value]


def _samples(column: tuple[float, ...]) -> tuple[float, float, float]:
    """(mean, min, max) of one column's raw samples, NaN (missing) left out."""
    total = sum(column)
    if total == total:  # no NaN among them (a NaN makes the sum NaN): all C-level passes
        return total / len(column), min(column), max(column)
    present = [v for v in column if v == v]
    if not present:
        return NAN, NAN, NAN
    return sum(present) / len(present), min(present), max(present)


def _buckets(
    means: tuple[float, ...], lows: tuple[float, ...], highs: tuple[float, ...], weights: list[int]
) -> tuple[float, float, float]:
    """(mean, min, max) of one column over finer buckets: means weighted by their counts."""
    total = sum(map(operator.mul, means, weights))
    if total == total:
        return total / sum(weights), min(lows), max(highs)
    kept = [k for k, v in enumerate(means) if v == v]
    if not kept:
        return NAN, NAN, NAN
    counted = sum(weights[k] for k in kept)
    if not counted:
        return NAN, NAN, NAN
    mean = sum(means[k] * weights[k] for k in kept) / counted
    low = min((v for v in lows if v == v), default=NAN)
    high = max((v for v in highs if v == v), default=NAN)
    return mean, low, high
