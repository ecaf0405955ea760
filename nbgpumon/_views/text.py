"""Text and HTML views: the summary line, the cells table, status, the snapshot.

Every string that came from user data (cell source, labels, process names, errors) goes
through ``html.escape`` before it is placed in HTML.
"""

from __future__ import annotations

import dataclasses
import html
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._foundation.gpu_names import gpu_short_label
from .._foundation.metrics import device_label, device_of, metric, metric_of, source_label
from .._foundation.units import format_bytes, format_percent, format_seconds, format_value
from .._ledger.records import AllocatorUsage, CellRecord, DeviceUsage, Retention
from .children_text import children_count_and_peak, children_text, job_lines
from .cluster_text import cluster_lines
from .holders_text import holders_text
from .pre_html import pre_html
from .status_text import process_lines, status_line, status_lines

RSS = metric("host", "rss")

if TYPE_CHECKING:
    from .._forensics.holder_scan import HolderScan
    from .._session.data import SessionData


@dataclass(frozen=True)
class TextView:
    """Something to display: plain text for terminals, HTML for notebooks."""

    text: str
    html: str

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html


# -- one cell -----------------------------------------------------------------------------
@dataclass(frozen=True)
class FrameworkFigures:
    """One framework's part of a record, over its GPUs."""

    label: str  # "torch", "JAX", "CuPy"
    allocated_total: int | None  # torch only
    peak: int | None  # the highest per-GPU peak
    peak_exact: bool
    kept: int | None
    pool_growth: int = 0  # bytes its cache or pool took from the driver during the cell


def framework_figures(record: CellRecord) -> list[FrameworkFigures]:
    """The frameworks a view shows for ``record``, each with its own peak and kept bytes.

    One framework measured: it. Several: those that hold nothing and did nothing are left out
    (CuPy imported beside torch), and if more than one holds memory, only those the cell
    changed are shown ("JAX: peak 5 GiB" means this cell's JAX work, not an earlier cell's
    arrays).
    """
    measured = record.frameworks
    if len(measured) == 1:
        return [_figures(measured[0], record.framework_usage(measured[0]))]
    figures = []
    for name in measured:
        usage = record.framework_usage(name)
        if any(u.allocated_before or u.allocated_after or u.peak_allocated for u in usage):
            figures.append((_figures(name, usage), any(_changed(u) for u in usage)))
    if len(figures) > 1:
        return [f for f, changed in figures if changed]
    return [f for f, _ in figures]


def _figures(name: str, usage: list[AllocatorUsage]) -> FrameworkFigures:
    peaks = [u.peak_allocated for u in usage if u.peak_allocated is not None]
    kept = [u.retained for u in usage if u.retained is not None]
    totals = [u.allocated_total for u in usage if u.allocated_total is not None]
    return FrameworkFigures(
        label=source_label(name),
        allocated_total=sum(totals) if totals else None,
        peak=max(peaks) if peaks else None,
        peak_exact=all(u.peak_exact for u in usage if u.peak_allocated is not None),
        kept=sum(kept) if kept else None,
        pool_growth=sum(
            max(0, (u.reserved_after or 0) - (u.reserved_before or 0))
            for u in usage
            if u.reserved_after is not None
        ),
    )


def _changed(u: AllocatorUsage) -> bool:
    """Whether the cell allocated in this framework (kept, freed, or only peaked)."""
    level = max(u.allocated_before or 0, u.allocated_after or 0)
    return (
        u.allocated_before != u.allocated_after
        or (u.peak_allocated or 0) > level
        or (u.allocated_total or 0) > 0
    )


def shown_peak_and_kept(record: CellRecord) -> tuple[int | None, bool, int | None]:
    """(peak, exact, kept) a one-figure view shows: the one framework shown, or the record's
    totals; (None, False, None) when several were measured and none is shown."""
    figures = framework_figures(record)
    if len(figures) == 1:
        return figures[0].peak, figures[0].peak_exact, figures[0].kept
    if not figures and len(record.frameworks) > 1:
        return None, False, None
    return record.peak_allocated, record.peak_exact, record.retained


def _peak_text(peak: int | None, exact: bool) -> str:
    return ("" if exact else "≥") + format_bytes(peak)


def _gpu_parts(record: CellRecord) -> list[str]:
    """``+1.0 GiB alloc · peak 3.2 GiB · kept 1.0 GiB``, one group per framework (named when
    there are several) and, on a machine of several GPUs, per GPU the cell used (named by its
    physical identity: ``gpu1 (cuda:0): +1.0 GiB alloc, peak 1.0 GiB, kept 1.0 GiB``); [] when
    no allocator was measured."""
    named = len(record.frameworks) > 1  # more than one framework is up: say which is which
    used = devices_used(record)
    if used:
        groups = [
            g for d in used for g in _framework_groups(_on(record, d), named, _device_name(d))
        ]
    else:
        groups = _framework_groups(record, named)
    if groups:
        groups[-1] += _held_by(record, "cuda")
    return groups


def _framework_groups(record: CellRecord, named: bool, where: str = "") -> list[str]:
    figures = framework_figures(record)
    if not figures and not record.frameworks and record.allocated_total is not None:
        # a record without per-framework figures (built by hand): its totals
        figures = [
            FrameworkFigures(
                "", record.allocated_total, record.peak_allocated, record.peak_exact,
                record.retained,
            )
        ]  # fmt: skip
    groups = []
    for f in figures:
        parts = [] if f.allocated_total is None else [
            f"{format_bytes(f.allocated_total, signed=True)} alloc"
        ]  # fmt: skip
        parts.append(f"peak {_peak_text(f.peak, f.peak_exact)}")
        if f.pool_growth - (f.kept or 0) >= POOL_NEWS:  # why NVML grew more than it kept
            parts.append(f"pool {format_bytes(f.pool_growth, signed=True)}")
        parts.append(f"kept {format_bytes(f.kept)}")
        label = " ".join(x for x in (where, f.label if named else "") if x)
        groups.append(f"{label}: {', '.join(parts)}" if label else " · ".join(parts))
    return groups


def devices_used(record: CellRecord) -> list[DeviceUsage]:
    """The GPUs whose allocator figures a view shows one by one: on a machine of more than one
    GPU, each that the cell's frameworks hold memory on or changed; [] on a one-GPU machine,
    or when no framework holds anything anywhere (the totals say it all)."""
    if len(record.devices) < 2:
        return []
    return [
        d
        for d in record.devices
        if any(u.allocated_before or u.allocated_after or u.peak_allocated for u in d.frameworks)
    ]


def _on(record: CellRecord, device: DeviceUsage) -> CellRecord:
    """``record`` as if ``device`` were its only GPU: that GPU's own figures."""
    return dataclasses.replace(record, devices=(device,), retention=None)


def _device_name(d: DeviceUsage) -> str:
    return gpu_short_label(d.index, d.cuda_index)


def summary_line(record: CellRecord) -> str:
    """``[12] +1.0 GiB alloc · peak 3.2 GiB · kept 1.0 GiB · 12.3 s · GPU 87%``; with several
    frameworks, ``[12] torch: peak 3.2 GiB, kept 1.0 GiB · JAX: peak ≥1.0 GiB, kept 0 B · …``;
    a cell that started processes ends ``· children: python train.py ≥3.0 GiB on gpu0, 87%``
    (before its status: ``… · children: … · error``)."""
    parts: list[str] = _gpu_parts(record)
    if not parts:
        used = [d.device_used_delta for d in record.devices if d.device_used_delta is not None]
        if used and sum(used) != 0:
            parts.append(f"GPU mem {format_bytes(sum(used), signed=True)}")
    if record.device_unavailable:  # said, so that no figure is taken for a measured one
        parts.append(f"GPU mem unavailable: {record.device_unavailable}")
    if record.rss_delta is not None:
        host = f"host {format_bytes(record.rss_delta, signed=True)}"
        rise = _host_peak_rise(record)
        if rise is not None and rise > max(record.rss_delta, 0) + _NOTABLE:
            host += f" (peak {format_bytes(rise, signed=True)})"
        parts.append(host + _held_by(record, "host"))
    parts.append(format_seconds(record.duration))
    if record.util_mean is not None:
        parts.append(f"GPU {format_percent(record.util_mean)}")
    if record.children:
        parts.append(f"children: {children_text(record.children)}")
    if record.status != "ok":
        parts.append(record.status.upper() if record.status == "oom" else record.status)
    return f"{record.name} " + " · ".join(parts)


_NOTABLE = 2**20  # a transient host peak smaller than this is noise, not news
POOL_NEWS = 256 * 2**20  # a pool that grew this much beyond what the cell kept is shown


def retention_text(retention: Retention) -> str:
    """``y 1.0 GiB, Out[7] 12 MiB``: who holds what a cell kept."""
    if not retention.holders:
        return "no holder found in variables, outputs or tracebacks"
    return ", ".join(f"{name} {format_bytes(size)}" for name, size in retention.holders)


def _held_by(record: CellRecord, device: str) -> str:
    r = record.retention
    return f": {retention_text(r)}" if r is not None and r.device == device else ""


def _host_peak_rise(record: CellRecord) -> int | None:
    if record.rss_peak is None or record.rss_before is None:
        return None
    return record.rss_peak - record.rss_before


# -- the ledger table ---------------------------------------------------------------------
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
        pairs = [(_device_name(d), _peak_and_kept(_on(r, d), named)) for d in used]
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
        peak = " · ".join(f"{f.label} {_peak_text(f.peak, f.peak_exact)}" for f in figures)
        kept = " · ".join(f"{f.label} {format_bytes(f.kept)}" for f in figures)
        return peak, kept
    one_peak, exact, one_kept = shown_peak_and_kept(r)
    return _peak_text(one_peak, exact), format_bytes(one_kept)


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


# -- status -------------------------------------------------------------------------------
def status_view(data: SessionData) -> TextView:
    text = "\n".join([*status_lines(data.status()), *cluster_lines(data.cluster, per_gpu=False)])
    return TextView(text, pre_html(text))


NO_CLUSTER = "not reading a cluster; %gpumon cluster URL reads one from a Prometheus server"


def cluster_view(data: SessionData) -> TextView:
    """``%gpumon cluster``: the cluster's status, every node and each of its GPUs."""
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


# -- holders ------------------------------------------------------------------------------
def holders_view(scan: HolderScan) -> TextView:
    text = holders_text(scan)
    return TextView(text, pre_html(text))
