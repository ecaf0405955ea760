"""A comparison as a bqplot report: per metric (host RSS, GPU memory used) one figure with both runs
on one axis aligned by cell (comparison_timeline), cell bands labelled, the regressions tinted. The
comparison table is below. Labels reach the browser as SVG text (d3's ``.text()``); the table is
escaped HTML."""

from __future__ import annotations

import html
from collections.abc import Sequence

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from ..._foundation.wording import counted
from ..._session.facts.session_data import SessionData
from ..chart.axis import bytes_axis
from ..palette import BAND_LABEL, REPORT_BANDS, REPORT_REGRESSION_BAND, RUN_COLORS
from ..report.bqplot_report import band_paths
from ..reprs.short import cut_middle
from .timeline import AlignedTimelines, Band, aligned_timelines
from .words import CellChange

_BAND_COLORS = (*REPORT_BANDS, REPORT_REGRESSION_BAND)  # alternate cells; a regression
MAX_BAND_LABELS = 40
# A band's label only where it fits the band, as on the page: the plot area's width at a
# notebook's usual width (the figure less its margins; narrower than most, so labels that show
# fit), and about one character of the 11 px labels
_PLOT_PX = 640
_LABEL_PX = 6.5


class ComparisonReport(widgets.VBox):
    """The report's widget: a VBox whose repr (where no widget can be drawn: a terminal) is
    one line, not every child's traits."""

    words = ""  # the runs and how many rows: set by comparison_report

    def __repr__(self) -> str:
        return f"<nbgpumon comparison report: {self.words}; a notebook draws it>"


def comparison_report(
    a: SessionData, b: SessionData, changes: Sequence[CellChange], table_html: str
) -> widgets.VBox:
    aligned = aligned_timelines(a, b, changes)
    x_scale = bq.LinearScale()
    x_scale.min, x_scale.max = aligned.span
    figures = [
        _figure(aligned, what, x_scale)
        for what in dict.fromkeys(line.what for line in aligned.lines)
    ]
    legend = widgets.HTML(
        f"<span style='color:{RUN_COLORS['A']}'>━ A</span> {html.escape(a.source)} &nbsp; "
        f"<span style='color:{RUN_COLORS['B']}'>┅ B</span> {html.escape(b.source)}"
    )
    table = widgets.HTML(table_html, layout=widgets.Layout(max_height="420px", overflow="auto"))
    report = ComparisonReport([legend, *figures, table], layout=widgets.Layout(width="100%"))
    report.words = f"{cut_middle(a.source)} against {cut_middle(b.source)}, " + counted(
        len(changes), "row"
    )
    report.add_class("nbgpumon-compare-report")
    return report


def _figure(aligned: AlignedTimelines, what: str, x_scale: bq.LinearScale) -> bq.Figure:
    lines = [line for line in aligned.lines if line.what == what]
    # round ticks in the unit the table writes this peak in, with headroom over it
    axis = bytes_axis(max((float(np.nanmax(line.y)) for line in lines if line.y.size), default=0))
    y_scale = bq.LinearScale(min=0.0, max=axis.top)
    band_scale = bq.LinearScale(min=0.0, max=1.0)
    marks: list[bq.Mark] = [*_bands(aligned.bands, aligned.span, x_scale, band_scale)]
    for line in lines:
        marks.append(
            bq.Lines(
                x=line.x,
                y=line.y / axis.size,
                scales={"x": x_scale, "y": y_scale},
                colors=[RUN_COLORS[line.run]],
                line_style="solid" if line.run == "A" else "dashed",
                labels=[f"{line.run}: {what}"],
                stroke_width=1.5,
            )
        )
    return bq.Figure(
        title=f"{what}, aligned by cell",
        marks=marks,
        axes=[
            bq.Axis(scale=x_scale, label="aligned seconds"),
            bq.Axis(
                scale=y_scale,
                side="left",
                label=axis.unit,
                grid_lines="dashed",
                tick_values=axis.ticks,
            ),
        ],
        fig_margin={"top": 36, "bottom": 36, "left": 70, "right": 24},
        animation_duration=0,
        layout=widgets.Layout(width="100%", height="260px"),
    )


def _bands(
    bands: Sequence[Band],
    span: tuple[float, float],
    x_scale: bq.LinearScale,
    band_scale: bq.LinearScale,
) -> list:
    """Cells as filled spans, one path per colour (a NaN between spans lifts the pen), and
    the labels of those wide enough to hold theirs (at most MAX_BAND_LABELS, evenly spread):
    short cells side by side would pile their labels on each other."""
    if not bands:
        return []
    x, y = band_paths(
        [(b.x0, b.x1, 2 if b.regression else i % 2) for i, b in enumerate(bands)],
        len(_BAND_COLORS),
    )
    filled = bq.Lines(
        x=x,
        y=y,
        scales={"x": x_scale, "y": band_scale},
        fill="bottom",
        colors=list(_BAND_COLORS),
        fill_colors=list(_BAND_COLORS),
        opacities=[0.0] * 3,
        fill_opacities=[0.6] * 3,
        stroke_width=0.0,
    )
    px = _PLOT_PX / max(span[1] - span[0], 1e-9)
    fits = [b for b in bands if (b.x1 - b.x0) * px >= _LABEL_PX * len(b.label) + 6]
    shown = fits[:: max(1, -(-len(fits) // MAX_BAND_LABELS))]
    if not shown:
        return [filled]
    labels = bq.Label(
        x=np.array([band.x0 for band in shown]),
        y=np.ones(len(shown)),
        text=np.array([band.label for band in shown], dtype=str),
        scales={"x": x_scale, "y": band_scale},
        colors=[BAND_LABEL],
        default_size=11,
        align="start",
        x_offset=3,
        y_offset=12,
    )
    return [filled, labels]
