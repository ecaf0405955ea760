"""A recorded session as one self-contained HTML page: no script, no network, just the SVG
timeline of the whole session, the session's facts and the ledger table. Every string from the
recording is escaped."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .._foundation.units import format_utc
from .svg import timeline_svg
from .text import cells_table

if TYPE_CHECKING:
    from .._recording.reader import RecordedSession as Recorded

_STYLE = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px} table{border-collapse:collapse;font-size:12px}
th,td{padding:2px 8px;border-bottom:1px solid #ddd}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px} dt{color:#666}
"""


def session_html(session: Recorded, max_points: int = 1200) -> str:
    """The page for ``session``."""
    window = session.window().downsample(max_points)
    bands = [(r.start, r.start + r.duration, r.name) for r in session.records if r.kind == "cell"]
    devices = [(int(g.get("index", i)), str(g.get("name", ""))) for i, g in enumerate(session.gpus)]
    picture = timeline_svg(window, session.columns, devices, bands, width=960)
    started = format_utc(session.started, "%Y-%m-%d %H:%M:%S UTC")
    span = float(session.times[-1] - session.times[0]) if len(session.times) > 1 else 0.0
    facts = {
        "file": str(session.path),
        "session": str(session.session_id),
        "started": started,
        "host": session.host,
        "GPUs": ", ".join(f"gpu{g.get('index')} {g.get('name')}" for g in session.gpus) or "none",
        "driver": session.driver or "—",
        "versions": ", ".join(f"{k} {v}" for k, v in session.versions.items()),
        "samples": f"{len(session.times)} over {span:.0f} s",
        "cells": str(len(session.records)),
    }
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in facts.items())
    marks = "".join(
        f"<li>{html.escape(format_utc(t, '%H:%M:%S'))} {html.escape(label)}</li>"
        for t, label in session.marks
    )
    table = cells_table(session.records).html
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>nbgpumon session {session.session_id}</title><style>{_STYLE}</style></head>"
        f"<body><h1>nbgpumon session {session.session_id}</h1><dl>{rows}</dl>"
        f"<div class='timeline'>{picture}</div>"
        + (f"<h2>Marks</h2><ul>{marks}</ul>" if marks else "")
        + f"<h2>Cells</h2>{table}</body></html>"
    )
