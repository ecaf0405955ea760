"""Two runs' timelines on one axis, aligned by cell: the comparison's report and page draw it.

Each run's time maps piecewise-linearly onto a shared axis ("aligned seconds" from the first
cell): row by row in the comparison's order, a matched cell starts at the same x in both runs
and keeps its own duration; the slot is as wide as the longer of the two, and the idle time
between cells as long as the longer gap, so neither run is squeezed. A cell of one run only
gets its own slot; the other run's line simply crosses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..._foundation.metrics import device_role
from ..._session.facts.session_data import SessionData
from .words import CellChange

MAX_POINTS = 1500  # per line


@dataclass(frozen=True)
class Band:
    x0: float  # aligned seconds
    x1: float
    label: str  # "[3]", "[3] → [4]"
    regression: bool


@dataclass(frozen=True)
class RunLine:
    """One run's line: aligned seconds and bytes."""

    run: str  # "A" or "B"
    what: str  # "host RSS", "GPU memory used"
    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class AlignedTimelines:
    bands: tuple[Band, ...]
    lines: tuple[RunLine, ...]  # each metric as A, then B

    @property
    def span(self) -> tuple[float, float]:
        xs = [b.x0 for b in self.bands] + [b.x1 for b in self.bands]
        xs += [float(v[0]) for line in self.lines for v in (line.x[:1], line.x[-1:]) if v.size]
        return (min(xs), max(xs)) if xs else (0.0, 1.0)


def aligned_timelines(
    a: SessionData, b: SessionData, changes: Sequence[CellChange]
) -> AlignedTimelines:
    """Both runs' host RSS and GPU memory (NVML's used, summed over GPUs) on the aligned axis."""
    knots_a, knots_b, bands = _knots(changes)
    lines = []
    for what, pick in (("host RSS", _host), ("GPU memory used", _gpu_used)):
        for run, data, knots in (("A", a, knots_a), ("B", b, knots_b)):
            times, values = pick(data)
            if values is not None and not np.isnan(values).all():
                lines.append(RunLine(run, what, _mapped(times, knots), values))
    return AlignedTimelines(tuple(bands), tuple(lines))


def _knots(changes: Sequence[CellChange]) -> tuple[list, list, list[Band]]:
    """Per run, (its time, aligned x) at each of its cells' starts and ends, and the bands."""
    cells = [c for c in changes if c.pair.kind == "cell"]
    knots_a: list[tuple[float, float]] = []
    knots_b: list[tuple[float, float]] = []
    bands: list[Band] = []
    x = 0.0
    end_a = end_b = None  # where the previous cell of each run ended, its own clock
    for c in cells:
        a, b = c.pair.a, c.pair.b
        if b is not None and knots_b and b.start < knots_b[-1][0]:
            b = None  # a cell moved back in B: its run's clock can't go back; it aligns nothing
        gaps = [r.start - end for r, end in ((a, end_a), (b, end_b)) if r and end is not None]
        x += max([0.0, *gaps])
        width = max(r.duration for r in (a, b) if r is not None) if (a or b) else 0.0
        for r, knots in ((a, knots_a), (b, knots_b)):
            if r is not None:
                knots += [(r.start, x), (r.start + r.duration, x + r.duration)]
        if a is not None:
            end_a = a.start + a.duration
        if b is not None:
            end_b = b.start + b.duration
        bands.append(Band(x, x + width, c.name, c.verdict == "regression"))
        x += width
    return knots_a, knots_b, bands


def _mapped(times: np.ndarray, knots: list[tuple[float, float]]) -> np.ndarray:
    """``times`` on the aligned axis: through the knots, and a second a second outside them."""
    times = np.asarray(times, dtype=np.float64)
    if not knots:
        return times - (times[0] if len(times) else 0.0)
    kt = np.array([k[0] for k in knots])
    kx = np.array([k[1] for k in knots])
    x = np.interp(times, kt, kx)
    x[times < kt[0]] = kx[0] - (kt[0] - times[times < kt[0]])
    x[times > kt[-1]] = kx[-1] + (times[times > kt[-1]] - kt[-1])
    return x


def _host(data: SessionData) -> tuple[np.ndarray, np.ndarray | None]:
    if "host.rss" not in data.columns:
        return np.empty(0), None
    window = data.window(columns=["host.rss"]).downsample(MAX_POINTS)
    return np.asarray(window.times), np.asarray(window.high[:, 0], dtype=np.float64)


def _gpu_used(data: SessionData) -> tuple[np.ndarray, np.ndarray | None]:
    columns = [c for c in data.columns if device_role(c) == "mem_used"]
    if not columns:
        return np.empty(0), None
    window = data.window(columns=columns).downsample(MAX_POINTS)
    high = np.asarray(window.high, dtype=np.float64)
    return np.asarray(window.times), np.nansum(high, axis=1)
