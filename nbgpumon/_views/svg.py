"""A static SVG picture of the timeline, for places without a widget front end.

nbconvert, GitHub, a saved notebook and Colab's fallback show this instead of the live chart.
Pure Python string building: no plotting library. Every label is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import numpy as np

from .._sampling.timeline import Window
from .panels import Panel, chart_panels

if TYPE_CHECKING:
    from .._session.data import Device

_GIB = 2**30
_TITLES = {
    "memory": "memory (GiB)",
    "util": "utilization (%)",
    "rss": "this kernel's resident memory (GiB)",
}
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
_COLORS = {
    "mem_used": "#1f77b4",
    "reserved": "#ff7f0e",
    "allocated": "#2ca02c",
    "gpu_util": "#d62728",
    "mem_util": "#9467bd",
    "rss": "#8c564b",
}


def timeline_svg(
    window: Window,
    columns: Sequence[str],
    devices: Sequence[Device],
    cells: Sequence[tuple[float, float, str]] = (),
    width: int = 720,
    panel_height: int = 110,
) -> str:
    """Memory and utilization per GPU (host RSS without a GPU) as one SVG document.

    ``devices`` are the session's GPUs, each titled by its physical identity; ``cells`` are
    (start, end, "[N]") bands, unix seconds.
    """
    index = {name: i for i, name in enumerate(columns)}
    charted = chart_panels(columns, ("memory", "util", "rss"))
    panels: list[tuple[str, list[tuple[str, str]], float | None, str]] = []
    for d in devices:
        for panel in (p for p in charted if p.device == d.index):
            title = f"{d.label}: " if panel.name == "memory" else f"{d.key}: "
            panels.append(_panel(title, panel))
    if not devices:
        panels += [_panel("host: ", p) for p in charted if p.device is None]
    times = window.times
    t0, t1 = (float(times[0]), float(times[-1])) if len(times) else (0.0, 1.0)
    span = max(t1 - t0, 1e-9)
    height = len(panels) * (panel_height + 24) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    left, right = 48, width - 8
    for k, (title, series, fixed_max, unit) in enumerate(panels):
        top = 8 + k * (panel_height + 24) + 16
        bottom = top + panel_height
        parts.append(f'<text x="{left}" y="{top - 4}" fill="#333">{escape(title)}</text>')
        parts.append(
            f'<rect x="{left}" y="{top}" width="{right - left}" '
            f'height="{panel_height}" fill="none" stroke="#ccc"/>'
        )
        bands = []  # (x0, x1, label) of the cells in view, in pixels
        for start, end, label in cells:
            x0 = left + (max(start, t0) - t0) / span * (right - left)
            x1 = left + (min(end, t1) - t0) / span * (right - left)
            if x1 > x0:
                bands.append((x0, x1, label))
        for k, (x0, x1, label) in enumerate(bands):
            parts.append(
                f'<rect x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" '
                f'height="{panel_height}" fill="#888" fill-opacity="0.12"/>'
            )
            if _label_fits(bands, k):
                parts.append(
                    f'<text x="{x0 + 2:.1f}" y="{top + 11}" fill="#555">{escape(label)}</text>'
                )
        columns_here = [index[c] for c, _ in series if c in index]
        values = window.mean[:, columns_here] if columns_here else np.empty((0, 0))
        present = values[~np.isnan(values)] if values.size else values
        top_value = fixed_max or (float(present.max()) if present.size else 1.0) or 1.0
        scale = _GIB if unit == "bytes" else 1.0
        parts.append(
            f'<text x="{left - 4}" y="{top + 9}" text-anchor="end" fill="#666">'
            f"{top_value / scale:.3g}</text>"
        )
        parts.append(f'<text x="{left - 4}" y="{bottom}" text-anchor="end" fill="#666">0</text>')
        for k, (column, metric) in enumerate(series):
            if column not in index:
                continue
            ys = window.mean[:, index[column]]
            points = [
                f"{left + (t - t0) / span * (right - left):.1f},"
                f"{bottom - (y / top_value) * panel_height:.1f}"
                for t, y in zip(times, ys, strict=True)
                if not math.isnan(y)
            ]
            if points:
                parts.append(
                    f'<polyline fill="none" stroke="{_color(metric, k)}" '
                    f'stroke-width="1.2" points="{" ".join(points)}"/>'
                )
    parts.append("</svg>")
    return "".join(parts)


def _panel(title: str, panel: Panel) -> tuple[str, list[tuple[str, str]], float | None, str]:
    """(title, [(column, metric name)], fixed maximum, unit) for one registry panel."""
    unit_note = _TITLES.get(panel.name, f"{panel.name} ({panel.unit})")
    fixed = 100.0 if panel.unit == "percent" else None
    return title + unit_note, [(s.column, s.metric.name) for s in panel.series], fixed, panel.unit


def _color(metric: str, k: int) -> str:
    return _COLORS.get(metric, _PALETTE[k % len(_PALETTE)])


_LABEL_CHAR = 6.5  # px per character of an 11 px sans-serif label, about


def _label_fits(bands: list[tuple[float, float, str]], k: int) -> bool:
    """Whether band ``k``'s label is drawn: not when it would run into the next band's label
    while its own band is narrower than it (a 3 ms cell just before a long one)."""
    x0, x1, label = bands[k]
    end = x0 + 2 + _LABEL_CHAR * len(label)
    return k + 1 == len(bands) or x1 >= end or bands[k + 1][0] >= end
