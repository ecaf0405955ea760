"""Median, percentiles and bootstrap confidence intervals for benchmark samples.

Pure Python on purpose: the load-time children must not import numpy before they measure.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear interpolation (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return _percentile_sorted(ordered, q)


def _percentile_sorted(ordered: Sequence[float], q: float) -> float:
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def describe(values: Sequence[float]) -> dict[str, float]:
    """n, median, p90, p99, mean, min and max of ``values``."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": _percentile_sorted(ordered, 50.0),
        "p90": _percentile_sorted(ordered, 90.0),
        "p99": _percentile_sorted(ordered, 99.0),
        "mean": sum(ordered) / len(ordered),
        "min": ordered[0],
        "max": ordered[-1],
    }


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[[Sequence[float]], float] = median,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``statistic`` over ``values``."""
    if len(values) < 2:
        value = statistic(values) if values else math.nan
        return value, value
    rng = random.Random(seed)
    n = len(values)
    estimates = sorted(statistic(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0 * 100.0
    return _percentile_sorted(estimates, tail), _percentile_sorted(estimates, 100.0 - tail)
