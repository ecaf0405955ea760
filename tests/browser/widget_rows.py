"""The live chart's rows as its page holds them, read from the widget's element: the times of
the rows it draws (``nbgpumonTimes``, a break in the lines as None) and a column's values in
them (``nbgpumonValues``). For tests that the chart moves and has no hole, and holds the
kernel's numbers, measured on the data, not on pixels."""

from __future__ import annotations

import itertools
import time
from pathlib import Path


def times(widget) -> list[float | None]:
    """The rows' times (unix seconds) as the chart draws them, oldest first; None: a break."""
    return widget.evaluate("el => el.nbgpumonTimes().map((t) => Number.isNaN(t) ? null : t)")


def values(widget, column: str) -> dict[float, float | None]:
    """The rows the chart draws, each time (unix seconds) to column ``column``'s value there
    (None: no value); breaks left out. Times and values are read in one go, so that a row
    arriving meanwhile cannot pair one row's time with another's value."""
    pairs = widget.evaluate(
        "(el, name) => { const t = el.nbgpumonTimes(), v = el.nbgpumonValues(name);"
        " return t.map((x, i) => [x, Number.isNaN(v[i]) ? null : v[i]])"
        ".filter(([x]) => !Number.isNaN(x)); }",
        column,
    )
    return {t: v for t, v in pairs}


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


def assert_moves_live(page, screenshot: Path, max_step_s: float = 1.5) -> None:
    """The page's first chart draws, then moves live (rows newer by seconds, more points),
    with no step wider than ``max_step_s`` (the sampler ticks every 0.1 s; a loaded machine may
    stall it a little) in all it holds, and no note that samples did not arrive; then a
    screenshot of the page, the chart in view, to ``screenshot``. For front ends that deliver
    what the sampler's thread sends (Voilà, marimo), on a page just opened."""
    widget = page.locator(".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=90_000)
    first = wait_newer(page, widget, 0.0, timeout_s=60)
    points = int(widget.get_attribute("data-points") or 0)
    latest = wait_newer(page, widget, first + 4, timeout_s=30)  # live, not a snapshot
    page.wait_for_function(
        "([el, n]) => Number(el.dataset.points) > n", arg=[widget.element_handle(), points]
    )
    step = widest_step(times(widget), since=float("-inf"))
    assert step < max_step_s, f"a break of {step:.1f} s in the rows up to {latest:.1f}"
    note = widget.locator(".nbgpumon-note")
    text = note.text_content() or ""
    assert note.is_hidden() and text == "", f"a note that samples did not arrive: {text!r}"
    widget.scroll_into_view_if_needed()
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot))
