"""The ledger as a pandas DataFrame (pandas is imported only when asked for)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .records import CellRecord, DeviceUsage

if TYPE_CHECKING:
    import pandas

_RECORD_FIELDS = (
    "index",
    "kind",
    "execution_count",
    "cell_id",
    "label",
    "status",
    "error",
    "duration",
    "rss_before",
    "rss_after",
    "rss_peak",
    "rss_peak_exact",
)
_TOTALS = (
    "allocated_total",
    "allocated_delta",
    "retained",
    "peak_allocated",
    "util_mean",
    "util_max",
    "rss_delta",
)
_DEVICE_FIELDS = tuple(
    f.name for f in fields(DeviceUsage) if f.name not in ("nvml_index", "cuda_index", "name")
)
_DEVICE_DERIVED = ("allocated_delta", "reserved_delta", "nvml_used_delta", "retained")


def record_row(record: CellRecord) -> dict:
    """One flat dict per record: totals over GPUs plus ``gpu<N>.<field>`` per device."""
    row: dict = {name: getattr(record, name) for name in _RECORD_FIELDS}
    row["start"] = record.start
    row.update({name: getattr(record, name) for name in _TOTALS})
    r = record.retention
    row["held_by"] = ", ".join(name for name, _ in r.holders) if r is not None else ""
    row["traced"] = "\n".join(record.traced)  # with tracing on: one line per cell line
    for d in record.devices:
        prefix = f"gpu{d.nvml_index}."
        for name in _DEVICE_FIELDS + _DEVICE_DERIVED:
            row[prefix + name] = getattr(d, name)
    return row


def cells_frame(records: Sequence[CellRecord]) -> pandas.DataFrame:
    """Records as a DataFrame; ``start`` is a UTC timestamp, bytes are nullable integers."""
    import pandas as pd

    frame = pd.DataFrame([record_row(r) for r in records])
    if frame.empty:
        return pd.DataFrame(columns=[*_RECORD_FIELDS, "start", *_TOTALS])
    frame = frame.convert_dtypes()  # missing bytes stay integers (<NA>), not floats
    frame["start"] = utc_times(frame["start"].astype("float64").to_numpy())
    return frame


def utc_times(seconds: Any) -> pandas.DatetimeIndex:
    """Unix seconds (floats) as UTC timestamps in nanoseconds. From floats with ``unit="s"``
    pandas 3.0 picks second resolution and drops the fractions (10 Hz samples collapse)."""
    import pandas as pd

    seconds = np.asarray(seconds, dtype=np.float64)
    whole = np.floor(seconds)  # apart: seconds * 1e9 as one float is off by ~100 ns
    fraction = np.round((seconds - whole) * 1e9).astype(np.int64)
    nanoseconds = whole.astype(np.int64) * 10**9 + fraction
    return pd.to_datetime(nanoseconds, unit="ns", utc=True)


def write_frames(
    frames: dict[str, pandas.DataFrame], directory: str | Path, fmt: str = "csv"
) -> list[Path]:
    """Write each frame as ``<name>.csv`` (or ``.parquet``) into ``directory``; the paths."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"format is csv or parquet, not {fmt!r}")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ValueError("Parquet needs pyarrow: pip install pyarrow (or use csv)")
    out = Path(directory).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        paths.append(path)
    return paths
