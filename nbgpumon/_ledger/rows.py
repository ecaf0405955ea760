"""A record as one flat row: what the cells table of a recording and ``cells_frame()`` hold."""

from __future__ import annotations

from dataclasses import fields

from .records import AllocatorUsage, CellRecord, DeviceUsage

RECORD_FIELDS = (
    "index",
    "kind",
    "execution_count",
    "cell_id",
    "label",
    "source_hash",
    "status",
    "error",
    "duration",
    "rss_before",
    "rss_after",
    "rss_peak",
    "rss_peak_exact",
)
TOTALS = (
    "allocated_total",
    "allocated_delta",
    "retained",
    "peak_allocated",
    "util_mean",
    "util_max",
    "rss_delta",
)
# last in the row, after every figure: a source may be 64 KiB and many lines
SOURCE_FIELDS = ("source_cut", "source")
_DEVICE_FIELDS = tuple(
    f.name
    for f in fields(DeviceUsage)
    if f.name not in ("index", "cuda_index", "name", "frameworks", "kinds_before", "kinds_after")
)
_DEVICE_DERIVED = ("allocated_delta", "reserved_delta", "device_used_delta", "retained")
# The device source's figures under the names cells_frame() and recordings have always given
# their columns (``gpu0.nvml_used_delta``): public (docs/python-api.md), so kept as they are.
_COLUMN_NAMES = {
    "device_used_before": "nvml_used_before",
    "device_used_after": "nvml_used_after",
    "device_used_delta": "nvml_used_delta",
}
_FRAMEWORK_FIELDS = tuple(f.name for f in fields(AllocatorUsage) if f.name != "framework")
_FRAMEWORK_DERIVED = ("allocated_delta", "retained")


def record_row(record: CellRecord) -> dict:
    """One flat dict per record. It holds totals over GPUs, ``gpu<N>.<field>`` per device (summed
    over its frameworks), ``gpu<N>.<framework>.<field>`` per framework on it, then the source; but
    ``traced`` and ``traced_peak``, the record's tuples, for the reader to write."""
    row: dict = {name: getattr(record, name) for name in RECORD_FIELDS}
    row["start"] = record.start
    row.update({name: getattr(record, name) for name in TOTALS})
    r = record.retention
    row["held_by"] = ", ".join(name for name, _ in r.holders) if r is not None else ""
    # with tracing on, as the record holds them: each reader of the row writes them its way
    # (cells_frame() as lines, the recording as JSON)
    row["traced"] = record.traced
    row["traced_peak"] = record.traced_peak
    for d in record.devices:
        prefix = f"gpu{d.index}."
        for name in _DEVICE_FIELDS + _DEVICE_DERIVED:
            row[prefix + _COLUMN_NAMES.get(name, name)] = getattr(d, name)
        # its end by kind, and the part of its peak it freed: ``gpu0.kind.parameters``
        row.update({f"{prefix}kind.{kind}": size for kind, size in d.peak_by_kind.items()})
        for f in d.frameworks:
            for name in _FRAMEWORK_FIELDS + _FRAMEWORK_DERIVED:
                row[f"{prefix}{f.framework}.{name}"] = getattr(f, name)
    row.update({name: getattr(record, name) for name in SOURCE_FIELDS})
    return row
