"""A recorded session as one self-contained HTML page: no script, no network, just the SVG
timeline of the whole session, the session's facts, the ledger table and the processes its
cells started. Every string from the recording is escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..._foundation.wording import counted, format_bytes, format_utc
from ..._ledger.records import CellRecord
from ..._session.facts.session_data import Cluster, Device
from ..chart.svg import timeline_svg
from ..memory.explain import kinds_words
from ..palette import PAGE_TEXT, QUIET_TEXT, TABLE_RULE
from ..words.cells_table import cells_table
from ..words.children import children_text
from ..words.recording_cells import cells_words, earlier_cells
from .nodes import node_series

if TYPE_CHECKING:
    from ..._recording.reader import RecordedSession as Recorded

STYLE = f"""
body{{font:14px system-ui,sans-serif;margin:24px;color:{PAGE_TEXT}}}
h1{{font-size:20px}} table{{border-collapse:collapse;font-size:12px}}
th,td{{padding:2px 8px;border-bottom:1px solid {TABLE_RULE}}}
dl{{display:grid;grid-template-columns:max-content auto;gap:2px 12px}} dt{{color:{QUIET_TEXT}}}
"""


def _samples(session: Recorded) -> str:
    """How many samples the session holds: raw, and folded into buckets (schema 3)."""
    if not session.buckets or session.sample_counts is None:
        return str(len(session.times))
    folded = int(session.sample_counts[: session.buckets].sum())
    raw = len(session.times) - session.buckets
    return f"{raw + folded} ({folded} of them in {counted(session.buckets, 'bucket')})"


def session_html(session: Recorded, max_points: int = 1200) -> str:
    """The page for ``session``, with its cells and marks, those of the recording. The file also
    keeps the kernel's earlier ones, which its timeline has no samples for: they are counted, as
    every view counts them, and left out."""
    window = session.window().downsample(max_points)
    records = session.records
    own_marks = session.marks
    bands = [(r.start, r.start + r.duration, r.name) for r in records if r.kind == "cell"]
    devices = session.devices
    # from the moment it started to its last sample, cell or mark: a cell that straddles the
    # start is drawn from there
    ends = [float(t) for t in session.times[-1:]] + [b for _, b, _ in bands]
    shown = (session.started, max([session.started + 1e-3, *ends, *(t for t, _ in own_marks)]))
    picture = timeline_svg(
        window, session.columns, devices, bands, width=960, marks=own_marks, span=shown
    )
    started = format_utc(session.started, "%Y-%m-%d %H:%M:%S UTC")
    span = float(session.times[-1] - session.times[0]) if len(session.times) > 1 else 0.0
    facts = {
        "file": str(session.path),
        "session": str(session.session_id),
        "started": started,
        "host": session.host,
        "GPUs": ", ".join(d.label for d in devices) or "none",
        "driver": session.driver or "—",
        "versions": ", ".join(f"{k} {v}" for k, v in session.versions.items()),
        "samples": f"{_samples(session)} over {span:.0f} s",
        "cells": cells_words(records, earlier_cells(session)),
    }
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in facts.items())
    marks = "".join(
        f"<li>{html.escape(format_utc(t, '%H:%M:%S'))} {html.escape(label)}</li>"
        for t, label in own_marks
    )
    table = cells_table(records).html
    children = _children_html(records, devices)
    kinds = _kinds_html(records)
    nodes = _nodes_html(Cluster(session.nodes, session.cluster_server)) if session.nodes else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>nbgpumon session {session.session_id}</title><style>{STYLE}</style></head>"
        f"<body><h1>nbgpumon session {session.session_id}</h1><dl>{rows}</dl>"
        f"<div class='timeline'>{picture}</div>"
        + (f"<h2>Marks</h2><ul class='marks'>{marks}</ul>" if marks else "")
        + nodes
        + f"<h2>Cells</h2>{table}{kinds}{children}</body></html>"
    )


def _kinds_html(records: Sequence[CellRecord]) -> str:
    """Each cell's peak by kind (what it held at its end, and the activations and temporaries
    it freed before it); "" when no cell's was read."""
    items = [
        f"<li data-cell='{'' if r.execution_count is None else r.execution_count}'>"
        f"{html.escape(f'{r.name} peak by kind: {words}')}</li>"
        for r in records
        if r.kind == "cell" and (words := kinds_words(r))
    ]
    if not items:
        return ""
    return f"<h2>Memory by kind, per cell</h2><ul class='kinds'>{''.join(items)}</ul>"


def _children_html(records: Sequence[CellRecord], devices: Sequence[Device]) -> str:
    """Each cell that started processes, with their words: ``[5] children: python train.py
    ≥3.0 GiB on gpu0, 87%``; "" when no cell did."""
    keys = {d.index: d.key for d in devices}

    def key(index: int) -> str:
        return keys.get(index, f"gpu{index}")

    items = [
        f"<li data-cell='{'' if r.execution_count is None else r.execution_count}'>"
        f"{html.escape(f'{r.name} children: {children_text(r.children, key)}')}</li>"
        for r in records
        if r.kind == "cell" and r.children
    ]
    if not items:
        return ""
    return f"<h2>Processes the cells started</h2><ul class='children'>{''.join(items)}</ul>"


def _nodes_html(cluster: Cluster | None) -> str:
    """Other nodes the session read: per node its GPUs, the most memory they used together
    and their mean utilization over the recording."""
    series = node_series(cluster)
    if cluster is None or not series:
        return ""
    gpus = {n.host: n.gpus for n in cluster.nodes()}
    rows = []
    for s in sorted(series, key=lambda s: s.host):
        used = s.used[~np.isnan(s.used)]
        util = s.util[~np.isnan(s.util)]
        models = sorted({g.model for g in gpus.get(s.host, ()) if g.model})
        cells = [
            s.host,
            f"{s.gpus} ({', '.join(models)})" if models else str(s.gpus),
            format_bytes(float(used.max())) if len(used) else "—",
            f"{float(util.mean()):.0f}%" if len(util) else "—",
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("node", "GPUs", "most memory used", "mean util"))
    source = html.escape(cluster.url or "a Prometheus server")
    return (
        f"<h2>Other nodes</h2><p>read from {source}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
