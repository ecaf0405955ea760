"""What the timeline hands its readers: :class:`Chunk` (raw rows by cursor) and :class:`Window`
(rows covering a time range). Plain holders of numpy arrays; this module does not import numpy
itself, so that the timeline can be built before numpy is (timeline.py says why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


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
        import numpy as np  # loaded already: the arrays this window holds are numpy's

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
