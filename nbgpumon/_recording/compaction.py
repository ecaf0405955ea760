"""Folding a recording's older samples into buckets as it is written, so that a long session stays
small. The newest ``raw_seconds`` stay as they were sampled, everything older becomes one
``sample_buckets`` row per device per ``BUCKET_SECONDS`` (how many samples it folds, and each
column's mean, minimum and maximum).

It runs inside the writer's transaction, after the new rows: the buckets are inserted and the
raw rows they fold deleted in the same commit, so the file holds every sample either raw or in
its bucket, never both and never neither, whenever it is killed or cut. SQLite reuses the
pages the deletes free for the next rows, which keeps the file's size bounded by the raw window
plus the buckets (no VACUUM, which would rewrite the whole file). Each pass folds at most
``MAX_FOLD_SECONDS`` of samples, so a backlog never stalls the writer for long; at 10 Hz a pass
folds one bucket (600 samples per device) once a minute of samples.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

from .schema import bucket_columns

# The timeline's coarsest level: 1,440 buckets a day per device. Finer ones cost load() time
# (it reads every value; 10 s buckets took it past 2 s for a day of 8 GPUs on a small VM), and
# the chart draws a day in 4,000 points anyway, each bucket's extremes kept.
BUCKET_SECONDS = 60.0
# The newest samples kept whole by default (GPUMon.record_raw_seconds): what the live timeline
# keeps raw (8,192 rows, 13.7 min at 10 Hz), rounded up. load() reads every raw value through
# Python floats, about 1 µs a sample per GPU on a small VM: 30 min of 8 GPUs took it to 2 s.
RAW_SECONDS = 900.0
MAX_FOLD_SECONDS = 600.0  # samples folded per transaction at most: 10 buckets


class Compactor:
    """Folds one session's samples older than ``raw_seconds`` before its newest into buckets;
    ``raw_seconds`` 0 keeps every sample raw."""

    def __init__(
        self,
        session: int,
        names: Sequence[str],
        raw_seconds: float = RAW_SECONDS,
        bucket_seconds: float = BUCKET_SECONDS,
        max_fold_seconds: float = MAX_FOLD_SECONDS,
    ) -> None:
        self.session = session
        self.raw_seconds = raw_seconds
        self.bucket_seconds = bucket_seconds
        self._max_buckets = max(1, math.floor(max_fold_seconds / bucket_seconds))
        self.rows_folded = 0  # raw rows turned into buckets so far
        self.buckets_written = 0
        triples = [bucket_columns(n) for n in dict.fromkeys(names)]
        targets = ", ".join(f'"{c}"' for triple in triples for c in triple)
        reductions = ", ".join(
            f'AVG("{mean}"), MIN("{mean}"), MAX("{mean}")' for mean, _, _ in triples
        )
        # One bucket is CAST(time / width AS INTEGER): the same expression picks the rows, folds
        # them and deletes them, so no sample near a bucket's edge can end up in two places.
        # ``time < :until`` only lets the (session, time) index narrow the scan.
        picked = (
            "FROM samples WHERE session = :session AND time < :until "
            "AND CAST(time / :width AS INTEGER) < :stop"
        )
        self._insert = (
            "INSERT INTO sample_buckets (session, time, seconds, device, samples, "
            f"{targets}) SELECT session, CAST(time / :width AS INTEGER) * :width, :width, "
            f"device, COUNT(*), {reductions} {picked} "
            "GROUP BY device, CAST(time / :width AS INTEGER)"
        )
        self._delete = f"DELETE {picked}"

    def fold(self, db: sqlite3.Connection, newest: float) -> int:
        """Fold, in the caller's open transaction, the whole buckets that end at least
        ``raw_seconds`` before ``newest`` (unix seconds, the newest sample written); the
        number of raw rows folded."""
        if self.raw_seconds <= 0:
            return 0
        width = self.bucket_seconds
        (oldest,) = db.execute(
            "SELECT MIN(time) FROM samples WHERE session = ?", (self.session,)
        ).fetchone()
        if oldest is None:
            return 0
        stop = min(
            math.floor((newest - self.raw_seconds) / width),
            math.floor(oldest / width) + self._max_buckets,
        )
        if stop * width <= oldest:
            return 0
        args = {"session": self.session, "width": width, "stop": stop, "until": (stop + 1) * width}
        buckets = db.execute(self._insert, args).rowcount
        folded = db.execute(self._delete, args).rowcount
        self.buckets_written += max(buckets, 0)
        self.rows_folded += max(folded, 0)
        return folded
