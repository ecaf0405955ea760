"""What ``%gpumon``, ``%gpumon status`` and ``%gpumon cluster`` print: the devices now and the
newest cells, the session's status, the cluster."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..._foundation.metrics import device_of, metric, metric_of
from ..._foundation.wording import format_bytes, format_value
from ..words.cells_table import cells_table
from ..words.text_view import TextView, pre_html
from .cluster import cluster_lines
from .session_status import process_lines, status_line, status_lines

RSS = metric("host", "rss")

if TYPE_CHECKING:
    from ..._session.facts.session_data import SessionData


def status_view(data: SessionData) -> TextView:
    text = "\n".join([*status_lines(data.status()), *cluster_lines(data.cluster, per_gpu=False)])
    return TextView(text, pre_html(text))


def cluster_view(data: SessionData) -> TextView:
    """What ``%gpumon cluster`` prints: the cluster's status, every node and each of its GPUs."""
    lines = cluster_lines(data.cluster, per_gpu=True, limit=None)
    text = (
        "\n".join(lines)
        or "not reading a cluster: %gpumon cluster URL starts (a Prometheus server)"
    )
    return TextView(text, pre_html(text))


# -- the snapshot (plain %gpumon) ---------------------------------------------------------
def snapshot_view(data: SessionData, last_cells: int = 5) -> TextView:
    """Current device state plus the newest ledger entries."""
    latest = data.latest() or {}
    status = data.status()
    lines = []
    age = f" ({time.time() - latest['time']:.1f} s ago)" if "time" in latest else ""
    lines.append(f"nbgpumon snapshot{age}")
    if not data.devices:
        lines.append(status_line(status))
    by_device = _latest_by_device(latest, data.columns)
    for d in data.devices:
        lines.append(f"{d.label}:")
        for panel, values in by_device.get(d.index, {}).items():
            lines.append(f"  {panel}: " + " · ".join(values))
    lines += [f"  {p}" for p in process_lines(status)]
    rss = latest.get(RSS.column())
    if rss is not None and not math.isnan(rss):
        lines.append(f"host: this kernel {format_bytes(rss)} resident")
    for panel, values in by_device.get(None, {}).items():
        lines.append(f"  {panel}: " + " · ".join(values))
    lines += cluster_lines(data.cluster, per_gpu=False)
    text = "\n".join(lines)
    table = cells_table(list(data.records)[-last_cells:])
    return TextView(text + "\n\n" + table.text, pre_html(text) + table.html)


def _latest_by_device(
    latest: dict[str, float], columns: Sequence[str]
) -> dict[int | None, dict[str, list[str]]]:
    """{device: {panel: ["label value", ...]}} for every registry column with a value now."""
    out: dict[int | None, dict[str, list[str]]] = {}
    for column in columns:
        m, value = metric_of(column), latest.get(column)
        if m is None or value is None or math.isnan(value):
            continue
        panel = out.setdefault(device_of(column), {}).setdefault(m.panel, [])
        panel.append(f"{m.label} {format_value(value, m.unit)}")
    return out
