"""A comparison as one self-contained HTML page: both runs' memory as SVG on one axis aligned
by cell, then the comparison table. No script, no network; every user string escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from ..._session.facts.session_data import SessionData
from ..chart.axis import bytes_axis, elapsed_ticks
from ..chart.svg_plot import TICK_GAP, PlotArea
from ..palette import (
    PICTURE_BACKGROUND,
    PICTURE_BAND,
    PICTURE_BAND_DARKER,
    PICTURE_REGRESSION_BAND,
    RUN_COLORS,
)
from ..report.page import STYLE
from ..words.text_view import TextView
from .timeline import AlignedTimelines, aligned_timelines
from .words import CellChange

RUN_DASHES = {"A": "", "B": ' stroke-dasharray="5,3"'}
_WIDTH, _HEIGHT, _LEFT, _RIGHT = 960, 150, 56, 8
_TITLE, _GAP = 16, 12  # px: a panel's title line; between panels


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
    regressions tinted. x: aligned time, y: round ticks in the unit each panel's peak is
    written in."""
    # no samples in either run (cells too quick to sample): the cells alone, aligned
    metrics = list(dict.fromkeys(line.what for line in aligned.lines)) or [""]
    x0, x1 = aligned.span
    ticks, labels, unit = elapsed_ticks(x0, x1, most=(_WIDTH - _LEFT - _RIGHT) // 80)
    pitch = _TITLE + _HEIGHT + TICK_GAP + _GAP
    height = 8 + len(metrics) * pitch + TICK_GAP
    bands = [
        (
            band.x0,
            band.x1,
            band.label,
            PICTURE_REGRESSION_BAND
            if band.regression
            else (PICTURE_BAND if n % 2 else PICTURE_BAND_DARKER),
            0.25 if band.regression else 0.1,
        )
        for n, band in enumerate(aligned.bands)
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{_WIDTH}" height="{height}" fill="{PICTURE_BACKGROUND}"/>',
    ]
    for k, what in enumerate(metrics):
        top = 8 + k * pitch + _TITLE
        lines = [line for line in aligned.lines if line.what == what]
        peak = max((float(np.nanmax(line.y)) for line in lines if line.y.size), default=0.0)
        axis = bytes_axis(peak)
        area = PlotArea(_LEFT, top, _WIDTH - _RIGHT, top + _HEIGHT, x0, x1, axis, _WIDTH)
        parts.append('<g class="panel">')
        parts.append(area.frame(f"{what} ({axis.unit})" if what else "no samples in either run"))
        parts.append(area.bands(bands))
        for line in lines:
            parts.append(area.polyline(line.x, line.y, RUN_COLORS[line.run], RUN_DASHES[line.run]))
        last = k == len(metrics) - 1
        title = f"time aligned by cell ({unit}, from the first cell's start)" if last else ""
        parts.append(area.x_ticks(ticks, labels, title))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
