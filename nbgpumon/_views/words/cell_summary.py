"""A cell's figures and its summary line (``[12] 3.2 s · GPU +1.5 GiB kept …``): per framework,
per device, what it kept and what holds it. Every user string is escaped in HTML."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..._foundation.gpu_names import gpu_short_label
from ..._foundation.metrics import metric, source_label
from ..._foundation.wording import format_bytes, format_percent, format_seconds
from ..._ledger.records import AllocatorUsage, CellRecord, DeviceUsage, Retention
from .children import children_text

RSS = metric("host", "rss")


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


def peak_text(peak: int | None, exact: bool) -> str:
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
            g for d in used for g in _framework_groups(on_device(record, d), named, device_name(d))
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
        parts.append(f"peak {peak_text(f.peak, f.peak_exact)}")
        if f.pool_growth - (f.kept or 0) >= POOL_NEWS:  # why NVML grew more than it kept
            parts.append(f"pool {format_bytes(f.pool_growth, signed=True)}")
        parts.append(f"kept {format_bytes(f.kept)}")
        label = " ".join(x for x in (where, f.label if named else "") if x)
        groups.append(f"{label}: {', '.join(parts)}" if label else " · ".join(parts))
    return groups


def devices_used(record: CellRecord) -> list[DeviceUsage]:
    """The GPUs whose allocator figures a view shows one by one. On a machine of more than one GPU,
    they are each that the cell's frameworks hold memory on or changed; [] on a one-GPU machine, or
    when no framework holds anything anywhere (the totals say it all)."""
    if len(record.devices) < 2:
        return []
    return [
        d
        for d in record.devices
        if any(u.allocated_before or u.allocated_after or u.peak_allocated for u in d.frameworks)
    ]


def on_device(record: CellRecord, device: DeviceUsage) -> CellRecord:
    """``record`` as if ``device`` were its only GPU: that GPU's own figures."""
    return dataclasses.replace(record, devices=(device,), retention=None)


def device_name(d: DeviceUsage) -> str:
    return gpu_short_label(d.index, d.cuda_index)


def summary_line(record: CellRecord) -> str:
    """A cell's summary line, such as ``[12] +1.0 GiB alloc · peak 3.2 GiB · kept 1.0 GiB ·
    12.3 s · GPU 87%``. With several frameworks, it reads ``[12] torch: peak 3.2 GiB, kept
    1.0 GiB · JAX: peak ≥1.0 GiB, kept 0 B · …``; a cell that started processes ends
    ``· children: python train.py ≥3.0 GiB on gpu0, 87%`` (before its status:
    ``… · children: … · error``)."""
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
    """Who holds what a cell kept: ``y 1.0 GiB, Out[7] 12 MiB``."""
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
