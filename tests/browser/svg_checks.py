"""Checks on a static SVG picture as the browser lays it out (the report page, the comparison
page): boxes inside boxes, round ticks."""

from __future__ import annotations

import math


def inside(inner: dict, outer: dict, slack: float = 0.5) -> bool:
    """Whether bounding box ``inner`` lies within ``outer``, give or take ``slack`` px."""
    return (
        inner["x"] >= outer["x"] - slack
        and inner["y"] >= outer["y"] - slack
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack
    )


def round_ticks(ticks: list[float]) -> bool:
    """``ticks`` are 0, s, 2s, ... for a step s of 1, 2 or 5 × 10^k."""
    if len(ticks) < 2 or ticks[0] != 0:
        return False
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    return round(mantissa, 9) in (1, 2, 5) and all(
        math.isclose(t, step * k, abs_tol=1e-9) for k, t in enumerate(ticks)
    )


def assert_within_the_picture(svg) -> None:
    """Every text inside the SVG; every panel's bands, lines and mark lines (less their
    strokes' half width) and band labels inside its plot area."""
    outer = svg.bounding_box()
    for text in svg.locator("text").all():
        assert inside(text.bounding_box(), outer), text.text_content()
    for panel in svg.locator("g.panel").all():
        plot = panel.locator("rect.plot").bounding_box()
        for shape in panel.locator("rect.band, polyline, line.mark").all():
            assert inside(shape.bounding_box(), plot, slack=1)
        for label in panel.locator("text.band-label").all():
            assert inside(label.bounding_box(), plot), label.text_content()
