"""Which chart panels a set of columns makes, from the metric registry: the static SVG and the
bqplot report draw these, and ``js/src/chart.js`` builds the same from the widget's ``columns``
metadata. A metric the registry marks as charted appears without a change here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..._foundation.metrics import LIMIT, SERIES, Metric, device_of, display_order, metric_of
from ..palette import LINE_CYCLE

# A line's colour is its metric's (the registry's ``color``), so one metric is one colour in the
# live chart, the report and the static SVG; a metric without one takes the palette's line cycle
# for its place in its panel. js/src/chart.js (``PALETTE``, ``lineColor``) follows the same rule.


def line_color(metric: Metric, k: int) -> str:
    """The colour of ``metric``'s line, the ``k``-th of its panel."""
    return metric.color or LINE_CYCLE[k % len(LINE_CYCLE)]


@dataclass(frozen=True)
class Series:
    column: str
    metric: Metric

    @property
    def label(self) -> str:
        return self.metric.label

    def color(self, k: int) -> str:
        """Its line's colour as the ``k``-th line of its panel."""
        return line_color(self.metric, k)


@dataclass(frozen=True)
class Panel:
    device: int | None  # NVML index; None for the host
    name: str  # the registry's panel: "memory", "util", "power", ...
    unit: str  # of its series
    series: tuple[Series, ...]
    limit: str | None = None  # the column drawn as its ceiling (total memory)


def chart_panels(columns: Sequence[str], names: Iterable[str] | None = None) -> list[Panel]:
    """The panels of ``columns``' charted metrics: GPUs in index order, then the host; within
    a device, panels and their lines in registry order. Only the panels ``names`` lists
    (default all)."""
    wanted = None if names is None else set(names)
    series: dict[tuple[int | None, str], list[Series]] = {}
    limits: dict[tuple[int | None, str], str] = {}
    first: dict[tuple[int | None, str], int] = {}
    for column in columns:
        m = metric_of(column)
        if m is None or not m.chart or (wanted is not None and m.panel not in wanted):
            continue
        key = (device_of(column), m.panel)
        first[key] = min(first.get(key, display_order(m)), display_order(m))
        if m.chart == LIMIT:
            limits[key] = column
        elif m.chart == SERIES:
            series.setdefault(key, []).append(Series(column, m))
    keys = sorted(series, key=lambda k: (k[0] is None, k[0] or 0, first[k]))
    return [
        Panel(
            device=k[0],
            name=k[1],
            unit=series[k][0].metric.unit,
            series=tuple(sorted(series[k], key=lambda s: display_order(s.metric))),
            limit=limits.get(k),
        )
        for k in keys
    ]
