"""The interactive report of a session, live or recorded: bqplot figures and a cell listing.

One adapter (``_session_data``) turns the live ``Monitor.data`` or a ``Recorded`` session into
``_ReportData``; everything below it reads only that. The report shows

* a memory timeline and a utilization timeline on one shared time axis, with each executed
  cell as a shaded band labelled ``[N]`` and each ``mark()`` as a dashed vertical line;
* brushing a time range lists the cells overlapping it and highlights their bars;
* per-cell bars: peak and kept memory, and duration;
* the memory panel's lines include each GPU's split between this kernel, the processes it
  started and every other process, and a listed cell names the processes it started.

Strings from user data (cell sources, region and mark labels) reach the browser either as SVG
text through d3's ``.text()`` (bqplot labels, axes, tooltips) or HTML-escaped in the listing.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bqplot as bq
import ipywidgets as widgets
import numpy as np
from bqplot.interacts import BrushIntervalSelector, PanZoom

from ..._foundation.metrics import DEVICE, PROCESS, device_of
from ..._foundation.units import byte_unit
from ..._foundation.wording import counted, format_bytes, format_local, format_seconds
from ..._ledger.records import CellRecord
from ..._session.facts.session_data import SessionData
from ..._session.live_data import LiveData
from ..chart.axis import bytes_axis, percent_axis, time_ticks, value_ticks
from ..chart.panels import Series, chart_panels
from ..memory.explain import kinds_words
from ..palette import (
    BAND_LABEL,
    BRUSH,
    DURATION_BAR,
    KEPT_BAR,
    LINE_CYCLE,
    MARK,
    PEAK_BAR,
    QUIET_TEXT,
    REPORT_BANDS,
    TABLE_RULE,
)
from ..reprs.short import cut_middle
from ..words.children import children_text
from ..words.recording_cells import cells_words, earlier_cells
from .nodes import MAX_NODE_LINES, NodeSeries, node_series

MAX_POINTS = 2000  # per line: enough for a full-width figure, cheap for the browser
MAX_BARS = 400  # newest cells shown as bars; thousands of <rect>s make the page crawl
MAX_LISTED = 200  # rows in the brushed listing
MAX_BAND_LABELS = 40  # [N] labels drawn on the timeline at once

_PANELS = ("memory", "util", "rss")  # what the report draws
_LINE_STYLES = ("solid", "dashed", "dotted", "dash_dotted")  # one per GPU
_MARGIN = {"top": 36, "bottom": 36, "left": 70, "right": 24}  # equal, so time axes line up


# -- the one adapter --------------------------------------------------------------------------
@dataclass(frozen=True)
class _ReportData:
    """What the report draws, the same for a live monitor and a recording."""

    source: str  # "live session" or the recording's path and session id
    times: np.ndarray  # float64 unix seconds, downsampled
    columns: tuple[str, ...]  # columns of ``mean`` / ``high``
    mean: np.ndarray  # per downsampled row, the mean of the samples it merges
    high: np.ndarray  # ... and their maximum (memory lines use it: a peak never vanishes)
    samples: int  # rows before downsampling
    records: tuple[CellRecord, ...]
    marks: tuple[tuple[float, str], ...]  # (unix seconds, label)
    gpus: tuple[tuple[int, str, int | None], ...]  # (NVML index, label, total bytes)
    nodes: tuple[NodeSeries, ...] = ()  # other nodes (a cluster read), busiest first
    earlier: int = 0  # a recording's: the kernel's cells from before it started, left out

    def series(self, column: str, peak: bool = False) -> np.ndarray | None:
        """One column as float64, None when absent or never measured."""
        if column not in self.columns:
            return None
        values = (self.high if peak else self.mean)[:, self.columns.index(column)]
        values = values.astype(np.float64)
        return None if np.isnan(values).all() else values

    @property
    def span(self) -> tuple[float, float] | None:
        """First and last instant of samples, cells and marks (unix seconds)."""
        points = [float(t) for t in self.times[:1]] + [float(t) for t in self.times[-1:]]
        points += [r.start for r in self.records] + [r.start + r.duration for r in self.records]
        points += [t for t, _ in self.marks]
        return (min(points), max(points)) if points else None


def band_paths(
    spans: Sequence[tuple[float, float, int]], rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """x and ``rows`` y-rows for a filled ``bq.Lines`` drawing each (start, end, row) span at the
    top of its row's path. A NaN after each span lifts the pen, and every path ends on a finite
    point (bqplot drops a curve that ends in NaN) of zero height."""
    n = len(spans)
    x = np.empty(3 * n)
    y = np.full((rows, 3 * n), np.nan)
    for i, (start, end, row) in enumerate(spans):
        x[3 * i : 3 * i + 3] = (start, end, end)
        y[row, 3 * i : 3 * i + 2] = 1.0
    if n:
        y[:, -1] = 0.0
    return x, y


def _session_data(source: Any, max_points: int = MAX_POINTS) -> _ReportData:
    """``source`` (any SessionData: ``Monitor.data`` or a ``Recorded``) as ``_ReportData``,
    with at most ``max_points`` rows per line."""
    if not isinstance(source, SessionData):
        raise TypeError(
            "report_widget takes nbgpumon.monitor().data or nbgpumon.load(PATH), "
            f"not {type(source).__name__}"
        )
    all_columns = list(source.columns)
    wanted = _wanted_columns(all_columns)
    # only the drawn columns: a day at 10 Hz is 864k rows of every column
    window = source.window(columns=wanted)
    records = list(source.records)
    marks = list(source.marks)
    gpus = [(d.index, d.label, d.memory_total) for d in source.devices]
    label = source.source
    samples = len(window.times)
    small = window.downsample(max_points)
    # columns name the GPUs even when NVML's device list is gone (a recording from elsewhere)
    known = {index for index, _, _ in gpus}
    for index in _gpu_indices(all_columns):
        if index not in known:
            gpus.append((index, f"gpu{index}", None))
    return _ReportData(
        source=label,
        times=np.asarray(small.times, dtype=np.float64),
        columns=tuple(wanted),
        mean=np.asarray(small.mean),
        high=np.asarray(small.high),
        samples=samples,
        records=tuple(records),
        marks=tuple((float(t), str(text)) for t, text in marks),
        gpus=tuple(sorted(gpus)),
        nodes=tuple(node_series(source.cluster, max_points)),
        earlier=earlier_cells(source),
    )


def _gpu_indices(columns: Sequence[str]) -> list[int]:
    return sorted({d for c in columns if (d := device_of(c)) is not None})


def _wanted_columns(columns: Sequence[str]) -> list[str]:
    return [s.column for p in chart_panels(columns, _PANELS) for s in p.series]


def _legend(series: Series) -> str:
    """A line's name in the report's one legend for all sources: "allocated (torch)",
    "GPU util", "host RSS"; the process split's as it is: "this kernel", "its children",
    "other processes"."""
    m = series.metric
    if m.scope == "host":
        return f"host {m.label}"
    if m.panel == "util":
        return f"{m.label} util"
    return m.label if m.group in (DEVICE, PROCESS) else f"{m.label} ({m.source})"


# -- the widget -------------------------------------------------------------------------------
def report_widget(source: Any) -> widgets.Widget:
    """The interactive report of `source`: the live session's data (`Monitor.data`) or a
    recorded session, `Recorded` (from `nbgpumon.load(PATH)`).

    Returns a :class:`Report` (an ``ipywidgets.VBox``); a live one has a refresh button.
    """
    return Report(source)


class Report(widgets.VBox):
    """Timelines (memory, utilization) sharing one time axis, a brushed cell listing and
    per-cell bars. Built from ``_ReportData``; :meth:`refresh` reads the source again."""

    def __repr__(self) -> str:
        # one line where a widget can't be drawn (a terminal), not every child's traits
        words = f"{cells_words(self.data.records, self.data.earlier)}, "
        words += counted(self.data.samples, "sample")
        return f"<nbgpumon report of {cut_middle(self.data.source)}: {words}; a notebook draws it>"

    def __init__(self, source: Any) -> None:
        self._source = source
        self._live = isinstance(source, LiveData)  # (a recording is never refreshed)
        self._syncing = False  # set while one brush clears the other
        self.data = _session_data(source)

        self.time_scale = bq.DateScale()
        self._band_scale = bq.LinearScale(min=0.0, max=1.0)  # cell bands: 0 bottom, 1 top
        self.memory_scale = bq.LinearScale(min=0.0)
        # a busy GPU's 100 % line stays off the frame's top edge
        self.util_scale = bq.LinearScale(min=0.0, max=percent_axis().top)
        self.memory_axis = bq.Axis(
            scale=self.memory_scale, side="left", label="GiB", grid_lines="dashed"
        )
        self.memory_figure = self._timeline_figure("Memory", self.memory_axis)
        self.util_figure = self._timeline_figure(
            "Utilization",
            _percent_axis(self.util_scale),
        )
        self.node_memory_scale = bq.LinearScale(min=0.0)
        self.node_memory_axis = bq.Axis(
            scale=self.node_memory_scale, side="left", label="GiB", grid_lines="dashed"
        )
        self.node_memory_figure = self._timeline_figure(
            "Other nodes: memory used", self.node_memory_axis
        )
        self.node_util_figure = self._timeline_figure(
            "Other nodes: utilization (mean of their GPUs)",
            _percent_axis(self.util_scale),
        )
        self.brushes = [
            BrushIntervalSelector(scale=self.time_scale, color=BRUSH)
            for _ in (self.memory_figure, self.util_figure)
        ]
        for brush in self.brushes:
            brush.observe(self._brushed, names="selected")
        self._panzooms = [
            PanZoom(scales={"x": [self.time_scale]}) for _ in (self.memory_figure, self.util_figure)
        ]
        self.time_scale.observe(self._view_changed, names=["min", "max"])

        self.cell_scale = bq.OrdinalScale()
        self.bytes_scale = bq.LinearScale(min=0.0)
        self.seconds_scale = bq.LinearScale(min=0.0)
        self.cell_axis = bq.Axis(scale=self.cell_scale, label="cell")
        self.duration_axis = bq.Axis(scale=self.cell_scale, label="cell")
        self.bytes_axis = bq.Axis(
            scale=self.bytes_scale, side="left", label="GiB", grid_lines="dashed"
        )
        self.cell_bars = bq.Bars(
            scales={"x": self.cell_scale, "y": self.bytes_scale},
            type="grouped",
            colors=[PEAK_BAR, KEPT_BAR],
            labels=["peak", "kept"],
            display_legend=True,
            padding=0.2,
            unselected_style={"opacity": "0.3"},
            tooltip=bq.Tooltip(fields=["x", "y"], labels=["cell", "GiB"], formats=["", ".3f"]),
        )
        self.duration_bars = bq.Bars(
            scales={"x": self.cell_scale, "y": self.seconds_scale},
            colors=[DURATION_BAR],
            padding=0.2,
            unselected_style={"opacity": "0.3"},
            tooltip=bq.Tooltip(fields=["x", "y"], labels=["cell", "seconds"], formats=["", ".2f"]),
        )
        self.bars_figure = self._bars_figure(
            "Per cell: memory", self.cell_bars, self.cell_axis, self.bytes_axis, "260px"
        )
        self.duration_axis_y = bq.Axis(
            scale=self.seconds_scale, side="left", label="s", grid_lines="dashed"
        )
        self.duration_figure = self._bars_figure(
            "Per cell: duration",
            self.duration_bars,
            self.duration_axis,
            self.duration_axis_y,
            "200px",
        )

        self.title = widgets.HTML()
        self.legend = widgets.HTML()  # in HTML: a bqplot legend would cover the [N] labels
        self.listing = widgets.HTML(layout=widgets.Layout(max_height="320px", overflow="auto"))
        self.mode = widgets.ToggleButtons(
            options=[("select cells", "brush"), ("pan / zoom", "panzoom")],
            value="brush",
            tooltips=[
                "drag across a timeline to list the cells in that range",
                "drag to pan, scroll to zoom the time axis",
            ],
            style={"button_width": "110px"},
        )
        self.mode.observe(self._mode_changed, names="value")
        self.zoom_button = _button("zoom to selection", "search-plus")
        self.zoom_button.on_click(self._zoom_to_selection)
        self.reset_button = _button("reset zoom", "expand")
        self.reset_button.on_click(self._reset_zoom)
        controls: list[widgets.Widget] = [self.mode, self.zoom_button, self.reset_button]
        if self._live:
            self.refresh_button = _button("refresh", "refresh")
            self.refresh_button.on_click(lambda _: self.refresh())
            controls.append(self.refresh_button)
        self.controls = widgets.HBox(controls)
        super().__init__(layout=widgets.Layout(width="100%"))
        self.add_class("nbgpumon-report")
        self._mode_changed()
        self._show(self.data)

    # -- building -----------------------------------------------------------------------------
    def _lay_out(self) -> None:
        # Without GPU columns the utilization figure is left out, not hidden: a bqplot figure
        # under display:none computes negative sizes and fills the console with errors.
        util = [self.util_figure] if self.util_lines else []
        nodes = [self.node_memory_figure] if self.node_memory_lines else []
        nodes += [self.node_util_figure] if self.node_util_lines else []
        self.children = [
            self.title,
            self.controls,
            self.legend,
            self.memory_figure,
            *util,
            *nodes,
            self.listing,
            self.bars_figure,
            self.duration_figure,
        ]

    def _timeline_figure(self, title: str, y_axis: bq.Axis) -> bq.Figure:
        return bq.Figure(
            title=title,
            axes=[bq.Axis(scale=self.time_scale, label="time"), y_axis],
            fig_margin=dict(_MARGIN),
            title_style={"font-size": "14px"},
            animation_duration=0,
            layout=widgets.Layout(width="100%", height="260px"),
        )

    def _bars_figure(
        self, title: str, bars: bq.Bars, x_axis: bq.Axis, y_axis: bq.Axis, height: str
    ) -> bq.Figure:
        return bq.Figure(
            title=title,
            marks=[bars],
            axes=[x_axis, y_axis],
            fig_margin=dict(_MARGIN, bottom=44),
            legend_location="top-right",
            padding_y=0.0,  # bars stand on the x axis, not below it
            title_style={"font-size": "14px"},
            animation_duration=0,
            layout=widgets.Layout(width="100%", height=height),
        )

    def refresh(self) -> None:
        """Read the source again (a live monitor has new samples and cells by now)."""
        self.data = _session_data(self._source)
        self._show(self.data)

    def _show(self, data: _ReportData) -> None:
        self.cells = [r for r in data.records if r.kind == "cell"]
        self.cells.sort(key=lambda r: r.start)
        self.title.value = _title_html(data)
        times = _dates(data.times)

        replaced = [*self.memory_figure.marks, *self.util_figure.marks]
        replaced += [*self.node_memory_figure.marks, *self.node_util_figure.marks]
        # drawn back to front: cell bands, the data, mark lines, then the labels on top
        self.memory_lines, unit = self._memory_lines(data, times)
        self.memory_axis.label = unit
        self.util_lines = self._util_lines(data, times)
        self._node_lines(data)
        self._lay_out()
        self.bands, self.band_labels, self.mark_lines, self.mark_labels = [], [], [], []
        for figure, lines in (
            (self.memory_figure, self.memory_lines),
            (self.util_figure, self.util_lines),
        ):
            bands, labels = self._cell_bands()
            marks = self._mark_lines(data.marks)
            self.bands.append(bands)
            self.band_labels.append(labels)
            self.mark_lines.append(marks[0] if marks else None)
            self.mark_labels.append(marks[1] if marks else None)
            figure.marks = [bands, *lines, *marks[:1], labels, *marks[1:]]
        for mark in replaced:  # a refresh must not leave the old marks' comms open
            mark.close()
        self.legend.value = _legend_html(
            self.memory_lines, self.util_lines, bool(data.marks), self.node_memory_lines
        )
        self._view_changed()

        self._show_bars()
        for brush in self.brushes:
            if brush.selected is not None:
                self._list(brush.selected)
                break
        else:
            self._list(None)

    def _memory_lines(self, data: _ReportData, times: np.ndarray) -> tuple[list[bq.Lines], str]:
        """Per GPU: NVML used, the split of it between this kernel, its children and other
        processes, each framework's reserved and allocated; host RSS without GPU columns.
        Memory lines plot each downsampled row's maximum, so a short peak stays visible."""
        series: list[tuple[np.ndarray, str, str, str]] = []
        panels = chart_panels(data.columns, ("memory",))
        for k, (index, _, _) in enumerate(data.gpus):
            for panel in (p for p in panels if p.device == index):
                for n, line in enumerate(panel.series):
                    y = data.series(line.column, peak=True)
                    if y is not None:
                        text = _legend(line)
                        name = f"gpu{index} {text}" if len(data.gpus) > 1 else text
                        style = _LINE_STYLES[k % len(_LINE_STYLES)]
                        series.append((y, name, line.color(n), style))
        if not data.gpus:
            for panel in chart_panels(data.columns, ("rss",)):
                for n, line in enumerate(panel.series):
                    y = data.series(line.column, peak=True)
                    if y is not None:
                        series.append((y, _legend(line), line.color(n), "solid"))
        top = max((float(np.nanmax(y)) for y, *_ in series), default=0.0)
        axis = bytes_axis(top)  # in the unit the cell listing says the peak in, with headroom
        self.memory_scale.max = axis.top
        self.memory_axis.tick_values = axis.ticks
        lines = [
            self._line(times, y / axis.size, name, color, style, self.memory_scale)
            for y, name, color, style in series
        ]
        return [line for line in lines if line is not None], axis.unit

    def _util_lines(self, data: _ReportData, times: np.ndarray) -> list[bq.Lines]:
        lines = []
        panels = chart_panels(data.columns, ("util",))
        for k, (index, _, _) in enumerate(data.gpus):
            for panel in (p for p in panels if p.device == index):
                for n, line in enumerate(panel.series):
                    y = data.series(line.column)
                    if y is not None:
                        text = _legend(line)
                        name = f"gpu{index} {text}" if len(data.gpus) > 1 else text
                        style = _LINE_STYLES[k % len(_LINE_STYLES)]
                        color = line.color(n)
                        lines.append(self._line(times, y, name, color, style, self.util_scale))
        return [line for line in lines if line is not None]

    def _node_lines(self, data: _ReportData) -> None:
        """A memory and a utilization line per node, the busiest MAX_NODE_LINES of them."""
        shown = data.nodes[:MAX_NODE_LINES]
        top = max((float(np.nanmax(n.used)) for n in shown if not np.isnan(n.used).all()),
                  default=0.0)  # fmt: skip
        axis = bytes_axis(top)
        self.node_memory_scale.max = axis.top
        self.node_memory_axis.tick_values = axis.ticks
        self.node_memory_axis.label = axis.unit
        memory, util = [], []
        for k, n in enumerate(shown):
            color = LINE_CYCLE[k % len(LINE_CYCLE)]  # a colour per node, not per metric
            style = _LINE_STYLES[(k // len(LINE_CYCLE)) % len(_LINE_STYLES)]
            name = f"{n.host} ({n.gpus} GPU{'' if n.gpus == 1 else 's'})"
            x = _dates(n.times)
            used = n.used / axis.size
            memory.append(self._line(x, used, name, color, style, self.node_memory_scale))
            util.append(self._line(x, n.util, name, color, style, self.util_scale))
        self.node_memory_lines = [m for m in memory if m is not None]
        self.node_util_lines = [m for m in util if m is not None]
        left_out = len(data.nodes) - len(shown)
        more = counted(left_out, "more node")
        suffix = f" (the {len(shown)} busiest; {more} not drawn)" if left_out else ""
        self.node_memory_figure.title = f"Other nodes: memory used{suffix}"
        self.node_memory_figure.marks = self.node_memory_lines
        self.node_util_figure.marks = self.node_util_lines

    def _line(
        self, x: np.ndarray, y: np.ndarray, name: str, color: str, style: str, scale: bq.Scale
    ) -> bq.Lines | None:
        """One series as its own mark, trimmed to its first and last measured value: bqplot
        places a (hidden) curve label at the last point and logs an error when it is NaN."""
        measured = np.flatnonzero(~np.isnan(y))
        if not len(measured):
            return None
        keep = slice(measured[0], measured[-1] + 1)
        return bq.Lines(
            x=x[keep],
            y=y[keep],
            scales={"x": self.time_scale, "y": scale},
            colors=[color],
            labels=[name],
            line_style=style,
            stroke_width=1.5,
        )

    def _cell_bands(self) -> tuple[bq.Lines, bq.Label]:
        """Cells as filled spans: one path per colour, ``[start, end]`` at the top of the band
        scale, filled down to the bottom; a NaN after each span breaks the path."""
        spans = [(r.start, r.start + r.duration, i % 2) for i, r in enumerate(self.cells)]
        x, y = band_paths(spans, len(REPORT_BANDS))
        bands = bq.Lines(
            x=_dates(x),
            y=y,
            scales={"x": self.time_scale, "y": self._band_scale},
            fill="bottom",
            colors=list(REPORT_BANDS),
            fill_colors=list(REPORT_BANDS),
            opacities=[0.0, 0.0],  # the fill only; no outline
            fill_opacities=[0.6, 0.6],
            stroke_width=0.0,
        )
        labels = bq.Label(
            x=_dates(np.empty(0)),
            y=np.empty(0),
            text=np.empty(0, dtype=str),
            scales={"x": self.time_scale, "y": self._band_scale},
            colors=[BAND_LABEL],
            default_size=11,
            align="start",
            x_offset=3,
            y_offset=12,
        )
        return bands, labels

    def _mark_lines(self, marks: Sequence[tuple[float, str]]) -> list[bq.Mark]:
        if not marks:
            return []
        # NaN lifts the pen between marks; the last point stays finite (see _line)
        t = np.repeat([m[0] for m in marks], 3)[:-1]
        y = np.tile([0.0, 1.0, np.nan], len(marks))[:-1]
        return [
            bq.Lines(
                x=_dates(t),
                y=y,
                scales={"x": self.time_scale, "y": self._band_scale},
                colors=[MARK],
                line_style="dashed",
                stroke_width=1.5,
            ),
            bq.Label(
                x=_dates(np.array([m[0] for m in marks])),
                y=np.full(len(marks), 0.0),
                text=np.array([m[1] for m in marks], dtype=str),
                scales={"x": self.time_scale, "y": self._band_scale},
                colors=[MARK],
                default_size=11,
                align="start",
                x_offset=3,
                y_offset=-4,
            ),
        ]

    def _view_changed(self, _change: Any = None) -> None:
        """The time axis was panned or zoomed (or the data changed): ticks at a round step
        for the range in view, labelled as precisely as that step needs, and the cells in
        view labelled."""
        lo, hi = self._view()
        ticks, fmt = time_ticks(lo, hi)
        for figure in (self.memory_figure, self.util_figure):
            with figure.axes[0].hold_sync():
                figure.axes[0].tick_values = _dates(ticks)
                figure.axes[0].tick_format = fmt
        self._place_band_labels()

    def _place_band_labels(self) -> None:
        """Label the cells in view, at most MAX_BAND_LABELS of them, evenly spread (zoom in
        for the rest)."""
        if not self.cells:
            chosen: list[CellRecord] = []
        else:
            lo, hi = self._view()
            visible = [r for r in self.cells if r.start <= hi and r.start + r.duration >= lo]
            gap = (hi - lo) / MAX_BAND_LABELS
            chosen, last = [], -math.inf
            for r in visible:
                if r.start - last >= gap:
                    chosen.append(r)
                    last = r.start
        x = _dates(np.array([r.start for r in chosen], dtype=np.float64))
        text = np.array([r.name for r in chosen], dtype=str)
        for label in self.band_labels:
            with label.hold_sync():
                label.x, label.y, label.text = x, np.full(len(chosen), 1.0), text

    def _view(self) -> tuple[float, float]:
        """The time range on screen, unix seconds."""
        span = self.data.span or (0.0, 1.0)
        lo, hi = self.time_scale.min, self.time_scale.max
        return (
            span[0] if lo is None else _unix(lo),
            span[1] if hi is None else _unix(hi),
        )

    def _show_bars(self) -> None:
        """Peak and kept memory per cell (GPU allocator; host RSS without GPU data), and
        duration, for the newest MAX_BARS cells. Names are made unique so the ordinal scale
        keeps one bar per cell even for two ``[?]``."""
        cells = self.cells[-MAX_BARS:]
        gpu = any(r.peak_allocated is not None for r in self.cells)
        if gpu:
            peak = [r.peak_allocated or 0 for r in cells]
            kept = [r.retained or 0 for r in cells]
            what = "GPU allocator"
        else:
            peak = [_host_peak(r) for r in cells]
            kept = [max(0, r.rss_delta or 0) for r in cells]
            what = "host RSS"
        top = max([*peak, *kept, 0])
        unit, scale = byte_unit(top)
        # bqplot's front end (0.6) computes no y domain for grouped bars (it reads a yRef the
        # bars never get), so every bar would be drawn 0 px high: set the domain here
        durations = [r.duration for r in cells]
        _nice_axis(self.bytes_axis, self.bytes_scale, top / scale)
        _nice_axis(self.duration_axis_y, self.seconds_scale, max(durations, default=0.0))
        names = _unique([r.name for r in cells])
        shown = "" if len(cells) == len(self.cells) else f", newest {len(cells)}"
        self.bars_figure.title = f"Per cell: memory ({what}{shown})"
        self.duration_figure.title = f"Per cell: duration{shown}"
        self.bytes_axis.label = unit
        self.cell_bars.tooltip.labels = ["cell", unit]
        x = np.array(names, dtype=str)
        step = max(1, math.ceil(len(names) / 40))  # keep tick labels readable
        ticks = x[::step] if step > 1 else None
        for axis in (self.cell_axis, self.duration_axis):
            axis.tick_values = ticks
        with self.cell_bars.hold_sync():
            self.cell_bars.x = x
            self.cell_bars.y = np.array([peak, kept], dtype=np.float64).reshape(2, -1) / scale
            self.cell_bars.selected = None
        with self.duration_bars.hold_sync():
            self.duration_bars.x = x
            self.duration_bars.y = np.array(durations, dtype=np.float64)
            self.duration_bars.selected = None
        self._bar_cells = cells

    # -- interaction --------------------------------------------------------------------------
    def _mode_changed(self, _change: Any = None) -> None:
        brush = self.mode.value == "brush"
        for figure, selector, panzoom in zip(
            (self.memory_figure, self.util_figure), self.brushes, self._panzooms, strict=True
        ):
            figure.interaction = selector if brush else panzoom

    def _brushed(self, change: dict) -> None:
        if self._syncing:
            return
        selected = change["new"]
        if selected is not None and len(selected) == 2:
            # one range at a time: a brush in the other figure would disagree with it
            self._syncing = True
            try:
                for brush in self.brushes:
                    if brush is not change["owner"]:
                        brush.selected = None
            finally:
                self._syncing = False
        self._list(selected)

    def selection(self) -> tuple[float, float] | None:
        """The brushed time range (unix seconds), or None."""
        for brush in self.brushes:
            if brush.selected is not None and len(brush.selected) == 2:
                a, b = (_unix(v) for v in brush.selected)
                return (min(a, b), max(a, b))
        return None

    def overlapping(self, t0: float, t1: float) -> list[CellRecord]:
        """Cells and regions whose run overlaps ``[t0, t1]`` (unix seconds), by start."""
        found = [r for r in self.data.records if r.start <= t1 and r.start + r.duration >= t0]
        return sorted(found, key=lambda r: (r.start, r.kind != "cell"))

    def _list(self, selected: Any) -> None:
        picked = self.selection() if selected is not None else None
        if picked is None:
            self.listing.value = (
                f"<p class='nbgpumon-hint' style='color:{QUIET_TEXT};margin:4px 0'>Drag across a "
                "timeline (mode <i>select cells</i>) to list the cells that ran in that range.</p>"
            )
            self.cell_bars.selected = None
            self.duration_bars.selected = None
            return
        t0, t1 = picked
        records = self.overlapping(t0, t1)
        marks = [(t, label) for t, label in self.data.marks if t0 <= t <= t1]
        self.listing.value = _listing_html(t0, t1, records, marks)
        chosen = {id(r) for r in records}
        indices = np.array([i for i, r in enumerate(self._bar_cells) if id(r) in chosen], int)
        self.cell_bars.selected = indices
        self.duration_bars.selected = indices

    def _zoom_to_selection(self, _button: Any = None) -> None:
        picked = self.selection()
        if picked is None or picked[1] <= picked[0]:
            return
        with self.time_scale.hold_sync():
            self.time_scale.min, self.time_scale.max = (_datetime(t) for t in picked)

    def _reset_zoom(self, _button: Any = None) -> None:
        with self.time_scale.hold_sync():
            self.time_scale.min = None
            self.time_scale.max = None


# -- helpers ----------------------------------------------------------------------------------
def _button(description: str, icon: str) -> widgets.Button:
    return widgets.Button(description=description, icon=icon, layout=widgets.Layout(width="auto"))


def _dates(t: np.ndarray) -> np.ndarray:
    """Unix seconds as datetime64[ms], what bqplot sends to the browser as a date."""
    t = np.asarray(t, dtype=np.float64)
    return np.round(t * 1000.0).astype(np.int64).astype("datetime64[ms]")


def _unix(value: Any) -> float:
    """A bqplot date (datetime64, naive-UTC datetime, ISO string) or a number, as unix s."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return aware.timestamp()
    if isinstance(value, (str, np.str_)):
        return float(np.datetime64(value.rstrip("Z"), "ms").astype(np.int64)) / 1000.0
    if isinstance(value, np.datetime64):
        return float(value.astype("datetime64[ms]").astype(np.int64)) / 1000.0
    return float(value)


def _datetime(t: float) -> dt.datetime:
    """Unix seconds as the naive UTC datetime bqplot's Date trait sends as ``...Z``."""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).replace(tzinfo=None)


def _percent_axis(scale: bq.LinearScale) -> bq.Axis:
    """A utilization figure's y axis (one each: an axis belongs to one figure)."""
    return bq.Axis(
        scale=scale, side="left", label="%", grid_lines="dashed", tick_values=percent_axis().ticks
    )


def _nice_axis(axis: bq.Axis, scale: bq.LinearScale, top: float) -> None:
    """Ticks at 0 and about four round steps up to at least ``top``, and the scale ending on
    the last: short bar figures get crowded labels otherwise."""
    ticks = value_ticks(top)
    scale.max = float(ticks[-1])
    axis.tick_values = ticks


def _host_peak(r: CellRecord) -> int:
    if r.rss_peak is None or r.rss_before is None:
        return 0
    return max(0, r.rss_peak - r.rss_before)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _legend_html(
    memory: list[bq.Lines], util: list[bq.Lines], marks: bool, nodes: Sequence[bq.Lines] = ()
) -> str:
    """The timelines' key: a swatch per line, then what a band and a dashed line mean."""
    border = {"solid": "solid", "dashed": "dashed", "dotted": "dotted", "dash_dotted": "dashed"}

    def swatch(css: str) -> str:
        return f"<span style='display:inline-block;vertical-align:middle;{css}'></span> "

    def group(title: str, lines: list[bq.Lines]) -> str:
        items = [
            swatch(f"width:18px;border-top:2px {border[m.line_style]} {m.colors[0]}")
            + html.escape(m.labels[0])
            for m in lines
        ]
        return f"<b>{title}</b> " + " &nbsp; ".join(items) if items else ""

    parts = [group("memory", memory), group("utilization", util), group("other nodes", list(nodes))]
    parts.append(swatch(f"width:14px;height:10px;background:{REPORT_BANDS[0]}") + "cell [N]")
    if marks:
        parts.append(swatch(f"width:0;height:12px;border-left:2px dashed {MARK}") + "mark")
    return (
        "<div class='nbgpumon-report-legend' style='font-size:12px;margin:2px 0 0 70px'>"
        + " &nbsp;·&nbsp; ".join(p for p in parts if p)
        + "</div>"
    )


def _title_html(data: _ReportData) -> str:
    parts = [html.escape(data.source)]
    span = data.span
    if span is None:
        parts.append("nothing recorded yet")
    else:
        start, end = span
        same_day = format_local(start, "%Y-%m-%d") == format_local(end, "%Y-%m-%d")
        parts.append(
            f"{format_local(start, '%Y-%m-%d %H:%M:%S')} – "
            f"{format_local(end, '%H:%M:%S' if same_day else '%Y-%m-%d %H:%M:%S')} "
            f"{html.escape(format_local(end, '%Z'))} ({format_seconds(end - start)})"
        )
    parts.append(html.escape(cells_words(data.records, data.earlier)))
    if data.gpus:
        names = ", ".join(
            label + (f", {format_bytes(total)}" if total else "") for _, label, total in data.gpus
        )
        parts.append(
            f"{len(data.gpus)} GPU{'' if len(data.gpus) == 1 else 's'}: " + html.escape(names)
        )
    else:
        parts.append("no GPU (host memory)")
    parts.append(counted(data.samples, "sample"))
    return (
        "<div class='nbgpumon-report-title' style='font-size:13px;margin:4px 0'>"
        "<b>nbgpumon report</b> · " + " · ".join(parts) + "</div>"
    )


def _listing_html(
    t0: float, t1: float, records: Sequence[CellRecord], marks: Sequence[tuple[float, str]]
) -> str:
    """The brushed range as a table; every user string escaped (they are cell sources)."""
    found = cells_words(records)
    head = (
        f"<p style='margin:4px 0'><b>{format_local(t0)} – {format_local(t1)}</b> "
        f"({format_seconds(t1 - t0)}): {found} ran in this range</p>"
    )
    rows = []
    for r in records[:MAX_LISTED]:
        gpu = r.peak_allocated is not None
        peak = r.peak_allocated if gpu else _host_peak(r)
        kept = r.retained if gpu else r.rss_delta
        columns = (
            r.name if r.kind == "cell" else "  ↳ " + r.name.split(" ", 1)[0] + " region",
            format_local(r.start),
            format_seconds(r.duration),
            ("" if (r.peak_exact if gpu else r.rss_peak_exact) else "≥") + format_bytes(peak),
            format_bytes(kept, signed=not gpu),
            r.status,
            children_text(r.children),  # the processes it started: "python train.py ≥3.0 GiB …"
            kinds_words(r),  # its peak by kind: "gpu0: parameters 475 MiB · …"
            r.label,
        )
        rows.append(
            f"<tr data-cell='{'' if r.execution_count is None else r.execution_count}' "
            f"data-kind='{html.escape(r.kind)}'>"
            + "".join(f"<td>{html.escape(c)}</td>" for c in columns)
            + "</tr>"
        )
    more = len(records) - MAX_LISTED
    if more > 0:
        rows.append(f"<tr><td colspan='9'>… {more} more (brush a shorter range)</td></tr>")
    titles = ("cell", "start", "time", "peak", "kept", "status", "children", "by kind", "source")
    header = "".join(f"<th>{h}</th>" for h in titles)
    table = (
        "<table class='nbgpumon-report-cells' style='border-collapse:collapse;font-size:12px'>"
        f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else ""
    )
    listed_marks = "".join(
        f"<li>{html.escape(format_local(t))} {html.escape(label)}</li>" for t, label in marks
    )
    marks_html = (
        f"<p style='margin:4px 0'>marks:</p><ul style='margin:0'>{listed_marks}</ul>"
        if marks
        else ""
    )
    style = (
        "<style>.nbgpumon-report-cells td,.nbgpumon-report-cells th{padding:1px 8px;"
        f"text-align:left;border-bottom:1px solid {TABLE_RULE};white-space:pre}}</style>"
    )
    return style + head + table + marks_html
