"""The live chart's rows as its page holds them, read from the widget's element: the times of
the rows it draws (``nbgpumonTimes``, a break in the lines as None). For tests that the chart
moves and has no hole, measured on the data, not on pixels."""

from __future__ import annotations

import itertools
import time


def times(widget) -> list[float | None]:
    """The rows' times (unix seconds) as the chart draws them, oldest first; None: a break."""
    return widget.evaluate("el => el.nbgpumonTimes().map((t) => Number.isNaN(t) ? null : t)")


def newest(widget) -> float:
    """The newest row's time, 0.0 before any."""
    held = [t for t in times(widget) if t is not None]
    return held[-1] if held else 0.0


def widest_step(held: list[float | None], since: float) -> float:
    """The longest time between two rows drawn one after the other from ``since`` on; a break
    there counts as infinite."""
    kept = [t for t in held if t is None or t >= since]
    if None in kept:
        return float("inf")
    return max((b - a for a, b in itertools.pairwise(kept)), default=float("inf"))


def wait_newer(page, widget, than: float, timeout_s: float = 30.0) -> float:
    """Wait (the page's events running meanwhile) until the widget holds a row newer than
    ``than``; that row's time. A TimeoutError, with what it held, after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (latest := newest(widget)) <= than:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no row newer than {than:.1f} within {timeout_s:.0f}s: {latest}")
        page.wait_for_timeout(100)
    return latest
