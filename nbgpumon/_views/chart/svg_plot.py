"""One plot area of a static SVG picture: data to pixels, and its frame, gridlines, tick
labels, lines, bands and marks as SVG text. The static picture (svg) and the comparison page
draw through it. Every string is XML-escaped: labels come from user data.

Elements carry classes (``plot``, ``ytick``, ``xtick``, ``band-label``, ``mark``,
``mark-label``) so that a page's tests can find them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from ..._foundation.clipping import clipped
from ..palette import BAND_LABEL, FRAME, GRIDLINE, MARK, QUIET_TEXT, TICK, TITLE_TEXT
from .axis import ValueAxis

LABEL_CHAR = 6.5  # px per character of an 11 px sans-serif label, about
TICK_GAP = 14  # px below a plot area for its time labels
MARK_ROW = 13  # px per row of mark labels
MAX_MARK_ROWS = 4  # rows of mark labels at most; more marks share the top one
MARK_LABEL = 60  # characters of a mark's label drawn at most: 390 px, inside any picture


@dataclass(frozen=True)
class PlotArea:
    """A rectangle of the picture (pixels) showing ``x0``..``x1`` across and 0..``axis.top``
    up; ``width`` is the whole picture's, so that labels near its edges stay inside it."""

    left: float
    top: float
    right: float
    bottom: float
    x0: float
    x1: float
    axis: ValueAxis
    width: float

    def x(self, value: float) -> float:
        span = max(self.x1 - self.x0, 1e-9)
        return self.left + (value - self.x0) / span * (self.right - self.left)

    def y(self, value: float) -> float:
        """The pixel row of ``value`` in the data's unit (bytes, %)."""
        scaled = value / self.axis.size
        return self.bottom - scaled / self.axis.top * (self.bottom - self.top)

    def frame(self, title: str) -> str:
        """The title above, the frame, the y gridlines and their labels (in the axis's unit)."""
        parts = [
            f'<text x="{self.left}" y="{self.top - 4}" fill="{TITLE_TEXT}">{escape(title)}</text>',
            f'<rect class="plot" x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
            f'height="{self.bottom - self.top}" fill="none" stroke="{FRAME}"/>',
        ]
        for tick, label in zip(self.axis.ticks, self.axis.labels, strict=True):
            y = self.y(tick * self.axis.size)
            if tick > 0:
                parts.append(
                    f'<line x1="{self.left}" x2="{self.right}" y1="{y:.1f}" y2="{y:.1f}" '
                    f'stroke="{GRIDLINE}"/>'
                )
            parts.append(
                f'<text class="ytick" x="{self.left - 4}" y="{y + 4:.1f}" text-anchor="end" '
                f'fill="{QUIET_TEXT}">{escape(label)}</text>'
            )
        return "".join(parts)

    def x_ticks(self, ticks: Sequence[float], labels: Sequence[str], title: str = "") -> str:
        """Tick marks and labels under the area, each label kept inside the picture; then
        ``title`` (what the labels count, with their unit) at the right, under them."""
        parts = []
        y = self.bottom + TICK_GAP - 2
        for tick, label in zip(ticks, labels, strict=True):
            x = self.x(tick)
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.bottom}" y2="{self.bottom + 4}" '
                f'stroke="{TICK}"/>'
            )
            parts.append(self._text_at(x, y, label, "xtick", QUIET_TEXT))
        if title:
            parts.append(
                f'<text class="xtitle" x="{self.right}" y="{y + TICK_GAP}" text-anchor="end" '
                f'fill="{QUIET_TEXT}">{escape(title)}</text>'
            )
        return "".join(parts)

    def _text_at(self, x: float, y: float, text: str, cls: str, fill: str) -> str:
        """``text`` centred on ``x``, or ending at the picture's edge where it would cross it."""
        half = LABEL_CHAR * len(text) / 2
        x = min(max(x, half + 2), self.width - half - 2)
        return (
            f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="middle" fill="{fill}">'
            f"{escape(text)}</text>"
        )

    def polyline(self, xs: np.ndarray, ys: np.ndarray, stroke: str, extra: str = "") -> str:
        """The finite points of ``ys`` (the data's unit) over ``xs``, as one polyline; "" for
        none."""
        keep = ~np.isnan(ys)
        points = " ".join(
            f"{self.x(float(x)):.1f},{self.y(float(y)):.1f}"
            for x, y in zip(xs[keep], ys[keep], strict=True)
        )
        if not points:
            return ""
        return (
            # round joins: a sharp corner's miter would poke past the plot's frame
            f'<polyline fill="none" stroke="{stroke}"{extra} stroke-width="1.3" '
            f'stroke-linejoin="round" points="{points}"/>'
        )

    def bands(self, spans: Sequence[tuple[float, float, str, str, float]]) -> str:
        """Cells as shaded spans (start, end, label, fill, opacity), clipped to the area; a
        label where it runs into no other (a 3 ms cell before a long one)."""
        shown = []
        for start, end, label, fill, opacity in spans:
            x0, x1 = self.x(max(start, self.x0)), self.x(min(end, self.x1))
            if x1 > x0 or (start <= self.x1 and end >= self.x0):
                shown.append((x0, max(x1, x0 + 0.5), label, fill, opacity))
        parts = []
        for k, (x0, x1, label, fill, opacity) in enumerate(shown):
            parts.append(
                f'<rect class="band" x="{x0:.1f}" y="{self.top}" width="{x1 - x0:.1f}" '
                f'height="{self.bottom - self.top}" fill="{fill}" fill-opacity="{opacity}"/>'
            )
            end = x0 + 2 + LABEL_CHAR * len(label)
            after = shown[k + 1][0] if k + 1 < len(shown) else self.right
            if end <= min(after, self.right):
                parts.append(
                    f'<text class="band-label" x="{x0 + 2:.1f}" y="{self.top + 11}" '
                    f'fill="{BAND_LABEL}">{escape(label)}</text>'
                )
        return "".join(parts)

    def mark_lines(self, times: Sequence[float]) -> str:
        """A dashed vertical line at each instant inside the area."""
        return "".join(
            f'<line class="mark" x1="{self.x(t):.1f}" x2="{self.x(t):.1f}" y1="{self.top}" '
            f'y2="{self.bottom}" stroke="{MARK}" stroke-dasharray="4,3"/>'
            for t in times
            if self.x0 <= t <= self.x1
        )

    def mark_rows(self, marks: Sequence[tuple[float, str]]) -> int:
        """How many rows of labels ``marks`` take above the area (0 for none in it)."""
        return max((row + 1 for _, row, _ in self._placed(marks)), default=0)

    def mark_labels(self, marks: Sequence[tuple[float, str]], y: float) -> str:
        """Each mark's label over its line, the lowest row on ``y`` and each further row
        above it."""
        return "".join(
            self._text_at(x, y - MARK_ROW * row, label, "mark-label", MARK)
            for x, row, label in self._placed(marks)
        )

    def _placed(self, marks: Sequence[tuple[float, str]]) -> list[tuple[float, int, str]]:
        """(x, row, label) of the marks inside the area: a label goes in the lowest row where
        it overlaps no other, kept inside the picture; past MAX_MARK_ROWS, in the top one."""
        ends: list[float] = []  # where each row's last label ends, px
        placed = []
        for t, label in sorted(marks):
            if not self.x0 <= t <= self.x1:
                continue
            label = _shortened(label)
            half = LABEL_CHAR * len(label) / 2
            x = min(max(self.x(t), half + 2), self.width - half - 2)
            row = next((r for r, end in enumerate(ends) if end + 6 <= x - half), len(ends))
            if row == len(ends):
                if row == MAX_MARK_ROWS:
                    row -= 1
                else:
                    ends.append(0.0)
            ends[row] = x + half
            placed.append((x, row, label))
        return placed


def _shortened(label: str) -> str:
    """A mark's label cut to MARK_LABEL characters (the report page lists it whole)."""
    return clipped(label, MARK_LABEL)
