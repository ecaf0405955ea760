"""The ledger as a table, text and HTML (``%gpumon cells``, a snapshot's newest cells), with
each job's ranks under it."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..._foundation.metrics import device_label, metric
from ..._foundation.wording import format_bytes, format_percent, format_seconds
from ..._ledger.records import CellRecord
from .cell_summary import (
    device_name,
    devices_used,
    framework_figures,
    on_device,
    peak_text,
    retention_text,
    shown_peak_and_kept,
)
from .children import children_count_and_peak, job_lines
from .text_view import TextView, pre_html

RSS = metric("host", "rss")


_HEADERS = (
    "cell",
    "status",
    "time",
    "alloc",
    "peak",
    "kept",
    "GPU util",
    "{device} Δ",  # the device source's label: "NVML Δ"
    "host Δ",
    "host peak",
    "children",  # how many processes it started, and their peaks summed: "1: ≥3.0 GiB"
    "held by",
    "source",
)


_ALWAYS = ("cell", "status", "time", "source")


def _row(r: CellRecord) -> tuple[str, ...]:
    device = [d.device_used_delta for d in r.devices if d.device_used_delta is not None]
    util = (
        "—"
        if r.util_mean is None
        else (f"{format_percent(r.util_mean)} (max {format_percent(r.util_max)})")
    )
    used = devices_used(r)
    if used:  # several GPUs: each one the cell used, by its physical identity
        named = len(r.frameworks) > 1
        pairs = [(device_name(d), _peak_and_kept(on_device(r, d), named)) for d in used]
        peak = "; ".join(f"{where} {p}" for where, (p, _) in pairs)
        kept = "; ".join(f"{where} {k}" for where, (_, k) in pairs)
    else:
        peak, kept = _peak_and_kept(r, len(r.frameworks) > 1)
    return (
        r.name,
        r.status,
        format_seconds(r.duration),
        format_bytes(r.allocated_total, signed=True),
        peak,
        kept,
        util,
        format_bytes(sum(device), signed=True) if device else (r.device_unavailable or "—"),
        format_bytes(r.rss_delta, signed=True),
        ("" if r.rss_peak_exact else "≥") + format_bytes(r.rss_peak),
        children_count_and_peak(r.children),
        retention_text(r.retention) if r.retention is not None else "",
        r.label if r.kind == "cell" else "",
    )


def _peak_and_kept(r: CellRecord, named: bool) -> tuple[str, str]:
    """The table's peak and kept cells for ``r``: each framework's own when ``named`` (their
    peaks need not coincide)."""
    if named:
        figures = framework_figures(r)
        peak = " · ".join(f"{f.label} {peak_text(f.peak, f.peak_exact)}" for f in figures)
        kept = " · ".join(f"{f.label} {format_bytes(f.kept)}" for f in figures)
        return peak, kept
    one_peak, exact, one_kept = shown_peak_and_kept(r)
    return peak_text(one_peak, exact), format_bytes(one_kept)


def cells_table(records: Sequence[CellRecord]) -> TextView:
    """The ledger, newest first, as a text table and an HTML table."""
    rows = [_row(r) for r in reversed(records)]
    if not rows:
        message = "No cells recorded yet: run a cell and ask again."
        return TextView(message, f"<p>{message}</p>")
    # columns empty in every row (no GPU, no torch yet) are left out
    keep = [
        i
        for i, h in enumerate(_HEADERS)
        if h in _ALWAYS or any(row[i] not in ("—", "") for row in rows)
    ]
    headers = [_HEADERS[i].format(device=device_label()) for i in keep]
    rows = [tuple(row[i] for i in keep) for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    # Inline styles: notebook CSS right-aligns and wraps cells; numbers must stay on one
    # line and text (user data, escaped) reads left to right.
    aligns = ["left" if h in ("cell", "status", "held by", "source") else "right" for h in headers]
    head = "".join(
        f'<th style="text-align:{a};white-space:nowrap">{html.escape(h)}</th>'
        for h, a in zip(headers, aligns, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="text-align:{a};white-space:nowrap">{html.escape(c)}</td>'
            for c, a in zip(row, aligns, strict=True)
        )
        + "</tr>"
        for row in rows
    )
    table = (
        f'<table class="nbgpumon-cells"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )
    jobs = _jobs_text(records)
    if jobs:  # each job's ranks, under the table (a column would not hold them)
        lines += ["", jobs]
        table += pre_html(jobs)
    return TextView("\n".join(lines), table)


def _jobs_text(records: Sequence[CellRecord]) -> str:
    """``[5] job torchrun train.py: 2 ranks …`` and a line per rank, for each cell (newest
    first) whose children include the ranks of a job; "" when none do."""
    lines = []
    for r in reversed(records):
        # a job's own line names the cell; its ranks' lines are indented under it
        lines += [x if x.startswith(" ") else f"{r.name} {x}" for x in job_lines(r.children)]
    return "\n".join(lines)
