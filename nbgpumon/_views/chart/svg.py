"""A static SVG picture of the timeline, for places without a widget front end.

nbconvert, GitHub, a saved notebook and Colab's fallback show this instead of the live chart.
Pure Python string building: no plotting library. Every label is XML-escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..._foundation.windows import Window
from ..palette import PICTURE_BACKGROUND, PICTURE_BAND
from .axis import ValueAxis, bytes_axis, clock_labels, percent_axis, time_ticks, value_axis
from .panels import Panel, chart_panels
from .svg_plot import MARK_ROW, TICK_GAP, PlotArea

if TYPE_CHECKING:
    from ..._session.facts.session_data import Device

_TITLES = {
    "memory": "memory",
    "util": "utilization",
    "rss": "this kernel's resident memory",
}
_SHADES = (0.12, 0.22)  # cell bands' opacities, alternating: back-to-back cells stay apart
_LEFT, _RIGHT, _TITLE, _GAP = 48, 8, 16, 8  # px: margins, a panel's title line, between panels


def timeline_svg(
    window: Window,
    columns: Sequence[str],
    devices: Sequence[Device],
    cells: Sequence[tuple[float, float, str]] = (),
    width: int = 720,
    panel_height: int = 110,
    marks: Sequence[tuple[float, str]] = (),
    span: tuple[float, float] | None = None,
) -> str:
    """Memory and utilization per GPU (host RSS without a GPU) as one SVG document.

    ``devices`` are the session's GPUs, each titled by its physical identity; ``cells`` are
    (start, end, "[N]") bands and ``marks`` (instant, label) lines, unix seconds, drawn where
    they fall in ``span`` (default: the window's first to last sample). Every panel
    has round y ticks in a unit of its own (memory in the unit its peak is written in) and
    clock ticks in UTC under it.
    """
    charted = chart_panels(columns, ("memory", "util", "rss"))
    panels: list[tuple[str, Panel]] = []
    for d in devices:
        for panel in (p for p in charted if p.device == d.index):
            panels.append((f"{d.label}: " if panel.name == "memory" else f"{d.key}: ", panel))
    if not devices:
        panels += [("host: ", p) for p in charted if p.device is None]
    times = window.times
    if span is None:
        span = (float(times[0]), float(times[-1])) if len(times) else (0.0, 1.0)
    t0, t1 = span
    ticks, fmt = time_ticks(t0, t1, most=max(3, (width - _LEFT - _RIGHT) // 90))
    labels = clock_labels(ticks, fmt)
    index = {name: i for i, name in enumerate(columns)}
    # the marks' labels sit in a strip over the first panel, as many rows as they need
    first = PlotArea(_LEFT, 0, width - _RIGHT, 1, t0, t1, percent_axis(), width)
    strip = first.mark_rows(marks) * MARK_ROW
    pitch = _TITLE + panel_height + TICK_GAP + _GAP
    height = 8 + strip + len(panels) * pitch + TICK_GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="{PICTURE_BACKGROUND}"/>',
    ]
    if strip:
        parts.append(first.mark_labels(marks, 6 + strip))
    for k, (title, panel) in enumerate(panels):
        top = 8 + strip + k * pitch + _TITLE
        drawn = [(s, index[s.column]) for s in panel.series if s.column in index]
        # memory is drawn at each point's highest sample: a short peak never vanishes in a
        # downsampled window, and the axis is sized by it
        values = window.high if panel.unit == "bytes" else window.mean
        axis = _axis(panel, values[:, [i for _, i in drawn]] if drawn else np.empty((0, 0)))
        area = PlotArea(_LEFT, top, width - _RIGHT, top + panel_height, t0, t1, axis, width)
        parts.append('<g class="panel">')
        parts.append(area.frame(f"{title}{_TITLES.get(panel.name, panel.name)} ({axis.unit})"))
        parts.append(
            area.bands(
                [
                    (a, b, label, PICTURE_BAND, _SHADES[n % 2])
                    for n, (a, b, label) in enumerate(cells)
                ]
            )
        )
        parts.append(area.mark_lines([t for t, _ in marks]))
        for n, (series, i) in enumerate(drawn):
            parts.append(area.polyline(times, values[:, i], series.color(n)))
        last = k == len(panels) - 1
        parts.append(area.x_ticks(ticks, labels, "time (UTC)" if last else ""))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _axis(panel: Panel, values: np.ndarray) -> ValueAxis:
    """The panel's y axis: 0–100 % for percentages, else round ticks up to its peak, bytes
    in the unit the peak is written in."""
    if panel.unit == "percent":
        return percent_axis()
    present = values[~np.isnan(values)] if values.size else values
    peak = float(present.max()) if present.size else 0.0
    if panel.unit == "bytes":
        return bytes_axis(peak)
    return value_axis(peak, panel.unit)
