"""A comparison as one self-contained HTML page: both runs' memory as SVG on one axis aligned
by cell, then the comparison table. No script, no network; every user string escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence
from xml.sax.saxutils import escape

import numpy as np

from .._session.data import SessionData
from .comparison import CellChange
from .comparison_timeline import AlignedTimelines, aligned_timelines
from .report_html import STYLE
from .text import TextView

RUN_COLORS = {"A": "#4c78a8", "B": "#f58518"}
RUN_DASHES = {"A": "", "B": ' stroke-dasharray="5,3"'}
_WIDTH, _HEIGHT, _LEFT, _RIGHT = 960, 150, 56, 8
_GIB = 2**30
_LABEL_PX = 6.5  # about one character of the 11 px sans-serif labels


def comparison_page(
    a: SessionData, b: SessionData, changes: Sequence[CellChange], table: TextView
) -> str:
    aligned = aligned_timelines(a, b, changes)
    runs = (
        f"<p><span style='color:{RUN_COLORS['A']}'>━ A</span> {html.escape(a.source)}<br>"
        f"<span style='color:{RUN_COLORS['B']}'>┅ B</span> {html.escape(b.source)}</p>"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>nbgpumon: two runs compared</title><style>{STYLE}</style></head>"
        f"<body><h1>nbgpumon: two runs compared</h1>{runs}"
        f"<div class='timeline'>{aligned_svg(aligned)}</div>"
        f"<h2>Cells</h2>{table.html}</body></html>"
    )


def aligned_svg(aligned: AlignedTimelines) -> str:
    """One panel per metric (host RSS, GPU memory used), A and B in each; cell bands, the
    regressions tinted. x: aligned seconds."""
    metrics = list(dict.fromkeys(line.what for line in aligned.lines))
    x0, x1 = aligned.span
    span = max(x1 - x0, 1e-9)
    height = max(1, len(metrics)) * (_HEIGHT + 30) + 24

    def x_of(x: float) -> float:
        return _LEFT + (x - x0) / span * (_WIDTH - _LEFT - _RIGHT)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{_WIDTH}" height="{height}" fill="white"/>',
    ]
    for k, what in enumerate(metrics):
        top = 8 + k * (_HEIGHT + 30) + 16
        bottom = top + _HEIGHT
        lines = [line for line in aligned.lines if line.what == what]
        peak = max((float(np.nanmax(line.y)) for line in lines if line.y.size), default=1.0)
        peak = peak or 1.0
        parts.append(f'<text x="{_LEFT}" y="{top - 4}" fill="#333">{escape(what)} (GiB)</text>')
        parts.append(
            f'<rect x="{_LEFT}" y="{top}" width="{_WIDTH - _LEFT - _RIGHT}" '
            f'height="{_HEIGHT}" fill="none" stroke="#ccc"/>'
        )
        for n, band in enumerate(aligned.bands):
            left, right = x_of(band.x0), x_of(band.x1)
            fill = "#e45756" if band.regression else ("#888" if n % 2 else "#555")
            opacity = 0.25 if band.regression else 0.1
            parts.append(
                f'<rect x="{left:.1f}" y="{top}" width="{max(right - left, 0.5):.1f}" '
                f'height="{_HEIGHT}" fill="{fill}" fill-opacity="{opacity}"/>'
            )
            if right - left >= _LABEL_PX * len(band.label) + 4:  # a label that fits its band
                parts.append(
                    f'<text x="{left + 2:.1f}" y="{top + 11}" fill="#555">'
                    f"{escape(band.label)}</text>"
                )
        parts.append(
            f'<text x="{_LEFT - 4}" y="{top + 9}" text-anchor="end" fill="#666">'
            f"{peak / _GIB:.3g}</text>"
            f'<text x="{_LEFT - 4}" y="{bottom}" text-anchor="end" fill="#666">0</text>'
        )
        for line in lines:
            keep = ~np.isnan(line.y)
            points = " ".join(
                f"{x_of(x):.1f},{bottom - y / peak * _HEIGHT:.1f}"
                for x, y in zip(line.x[keep], line.y[keep], strict=True)
            )
            if points:
                parts.append(
                    f'<polyline fill="none" stroke="{RUN_COLORS[line.run]}"{RUN_DASHES[line.run]} '
                    f'stroke-width="1.3" points="{points}"/>'
                )
    axis_y = height - 6
    parts.append(
        f'<text x="{_LEFT}" y="{axis_y}" fill="#666">{_seconds(x0, span)} s</text>'
        f'<text x="{_WIDTH - _RIGHT}" y="{axis_y}" text-anchor="end" fill="#666">'
        f"{_seconds(x1, span)} s (aligned by cell)</text></svg>"
    )
    return "".join(parts)


def _seconds(x: float, span: float) -> str:
    """An end of the axis, to a precision the span needs: a 0.6 s span ends at "0.57", not "1"."""
    text = f"{x:.{0 if span >= 10 else 1 if span >= 1 else 2}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text == "-0" else text
