"""Ticks for every chart the views draw: values at 1, 2 or 5 × 10^k, bytes in the unit the
tables beside them use, times at the steps a person counts in. Numbers and labels only; the
SVG pages (svg_plot) and the bqplot report place them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from ..._foundation.units import byte_unit

HEADROOM = 0.08  # above a chart's peak: a line along the frame's top edge is hard to read
VALUE_TICKS = 4  # about this many steps from 0 to the peak: short panels stay legible
MAX_TIME_TICKS = 8  # on a time axis: "22:13:20" labels of a 500 px plot stay apart
MIN_TIME_TICKS = 3  # and at least this many, whatever the span: two say little of a scale
# Tick steps in seconds, the ones a person counts in; longer spans take whole weeks. No step
# is more than 2.5 times the one before it, so the step under one that leaves fewer than
# MIN_TIME_TICKS on a span gives at most 8 (3 × 2.5 + 1).
TIME_STEPS = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
    0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
    60, 120, 300, 600, 900, 1800,
    3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600,
    86400, 2 * 86400, 4 * 86400, 7 * 86400,
)  # fmt: skip


@dataclass(frozen=True)
class ValueAxis:
    """A y axis from 0: ``ticks`` in ``unit`` (values are divided by ``size`` to get there),
    and ``top``, the end of its domain in that unit, a little above the peak."""

    unit: str  # "MiB", "GiB", "%"
    size: float  # one unit, in the data's own unit (2**20 for MiB of bytes; 1 for percent)
    ticks: np.ndarray
    top: float

    @property
    def labels(self) -> list[str]:
        return [_number(t) for t in self.ticks]


def nice_step(peak: float, count: int = VALUE_TICKS) -> float:
    """The step of 1, 2 or 5 × 10^k that covers 0..``peak`` (> 0) in the number of steps
    nearest ``count``, the wider on a tie: 9 takes 2 (five steps), not 5 (two)."""
    magnitude = 10.0 ** math.floor(math.log10(peak / count))
    steps = [m * magnitude * f for f in (0.1, 1, 10) for m in (1, 2, 5)]
    return min(steps, key=lambda s: (abs(math.ceil(peak / s - 1e-9) - count), -s))


def value_ticks(peak: float, count: int = VALUE_TICKS) -> np.ndarray:
    """0 and about ``count`` round steps, the last at or above ``peak`` (nothing, 1)."""
    peak = peak if peak > 0 and math.isfinite(peak) else 1.0
    step = nice_step(peak, count)
    return np.round(step * np.arange(math.ceil(peak / step - 1e-9) + 1), 12)


def value_axis(peak: float, unit: str, size: float = 1.0, count: int = VALUE_TICKS) -> ValueAxis:
    """An axis for values up to ``peak`` (in the data's unit), ticks in ``unit``."""
    scaled = peak / size if peak > 0 and math.isfinite(peak) else 0.0
    ticks = value_ticks(scaled, count)
    return ValueAxis(unit, size, ticks, max(float(ticks[-1]), scaled * (1 + HEADROOM)))


def bytes_axis(peak: float, count: int = VALUE_TICKS) -> ValueAxis:
    """An axis for bytes up to ``peak``, in the unit ``format_bytes`` says the peak in."""
    unit, size = byte_unit(peak if peak > 0 and math.isfinite(peak) else 0.0)
    return value_axis(peak, unit, size, count)


def percent_axis() -> ValueAxis:
    """0 to 100 %, with headroom over 100 so a busy GPU's line stays off the frame."""
    return ValueAxis("%", 1.0, np.arange(0.0, 101.0, 20.0), 100.0 * (1 + HEADROOM))


def _number(value: float) -> str:
    """A tick as written: "0", "250", "1.5", "0.02"; never "1e-05" or "0.30000000000000004"."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


# -- time -------------------------------------------------------------------------------------
def time_step(span: float, most: int = MAX_TIME_TICKS) -> float:
    """The smallest step in TIME_STEPS that puts fewer than ``most`` ticks on ``span``
    seconds (whole weeks beyond them)."""
    span = max(span, 1e-3)
    step = next((s for s in TIME_STEPS if span / s < most), None)
    if step is None:  # months and more: whole weeks
        step = 7 * 86400 * math.ceil(span / most / (7 * 86400) + 1e-9)
    return step


def enough_ticks(lo: float, hi: float, step: float) -> float:
    """``step``, or the largest smaller one (of TIME_STEPS, or whole weeks) that puts at least
    MIN_TIME_TICKS of its multiples on ``lo``..``hi``. A 2.5 s recording ticked every second can
    show just two labels."""
    weeks = [7 * 86400 * k for k in range(1, int(step // (7 * 86400)) + 1)]
    smaller = sorted({s for s in (*TIME_STEPS, *weeks) if s < step}, reverse=True)
    for candidate in (step, *smaller):
        if len(steps_over(lo, hi, candidate)) >= MIN_TIME_TICKS:
            return candidate
    return TIME_STEPS[0]  # a span of a few milliseconds: the finest step there is


def steps_over(lo: float, hi: float, step: float) -> np.ndarray:
    """The multiples of ``step`` in ``[lo, hi]``, counted in integer milliseconds: no
    0.30000000000000004."""
    step_ms = round(step * 1000)
    first = math.ceil(lo * 1000 / step_ms - 1e-9)
    last = math.floor(hi * 1000 / step_ms + 1e-9)
    return np.arange(first, last + 1, dtype=np.int64) * step_ms / 1000.0


def time_ticks(lo: float, hi: float, most: int = MAX_TIME_TICKS) -> tuple[np.ndarray, str]:
    """Clock ticks over ``lo``..``hi`` (unix seconds) and the d3 format that labels them. The ticks
    are the multiples of the smallest step in TIME_STEPS that gives at most ``most`` of them (but
    never fewer than MIN_TIME_TICKS, however short the span); the format (UTC, as bqplot formats a
    DateScale with a tick_format) labels them no more precisely than the step needs.

    d3's own choice for a DateScale is about ten ticks whatever the width, one a second for
    20 s: "22:13:20" labels that overlap into a strip.
    """
    span = max(hi - lo, 1e-3)
    step = time_step(span, most)
    if step < 1 and most > 5:  # "22:13:20.500" is half as wide again: fewer of them
        step = time_step(span, 5)
    step = enough_ticks(lo, hi, step)
    if step < 1:
        fmt = "%H:%M:%S.%L"
    elif step < 60:
        fmt = "%H:%M:%S"
    elif step < 86400:
        fmt = "%H:%M" if span <= 86400 else "%b %d %H:%M"
    else:
        fmt = "%b %d"
    return steps_over(lo, hi, step), fmt


def clock_labels(ticks: np.ndarray, fmt: str) -> list[str]:
    """``time_ticks``'s ticks written in its d3 format, in UTC (``%L``: milliseconds)."""
    out = []
    for t in ticks:
        moment = datetime.fromtimestamp(float(t), timezone.utc)
        ms = f"{moment.microsecond // 1000:03d}"
        out.append(ms.join(moment.strftime(part) for part in fmt.split("%L")))
    return out


def elapsed_ticks(
    lo: float, hi: float, most: int = MAX_TIME_TICKS
) -> tuple[np.ndarray, list[str], str]:
    """Ticks over ``lo``..``hi`` seconds of elapsed time, their labels and the unit they are in. The
    unit is seconds under a minute's step ("0", "15", "30"), else minutes or hours, so a label is a
    round number and never "3600"."""
    step = enough_ticks(lo, hi, time_step(hi - lo, most))
    ticks = steps_over(lo, hi, step)
    unit, size = ("s", 1.0) if step < 60 else ("min", 60.0) if step < 3600 else ("h", 3600.0)
    return ticks, [_number(t / size) for t in ticks], unit
