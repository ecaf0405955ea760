"""The ledger, the samples and a comparison as pandas DataFrames (pandas is imported only when
asked for), and writing them out."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._foundation.errors import UsageError
from .._foundation.new_files import write_new
from .._ledger.records import CellRecord
from .._ledger.rows import RECORD_FIELDS, SOURCE_FIELDS, TOTALS, record_row
from .comparison.words import CellChange
from .memory.explain import kinds_note_words
from .words.traced import traced_line

if TYPE_CHECKING:
    import pandas


def cells_frame(records: Sequence[CellRecord]) -> pandas.DataFrame:
    """Records as a DataFrame; ``start`` is a UTC timestamp, bytes are nullable integers; the
    last two columns are ``source_cut`` and ``source`` (up to 64 KiB of the cell's source)."""
    import pandas as pd

    frame = pd.DataFrame([frame_row(r) for r in records])
    if frame.empty:
        return pd.DataFrame(
            columns=[*RECORD_FIELDS, "start", *TOTALS, *CHILDREN_FIELDS, *SOURCE_FIELDS]
        )
    frame = frame.convert_dtypes()  # missing bytes stay integers (<NA>), not floats
    # last even when a later record brings a GPU's or a framework's columns
    frame = frame[[c for c in frame.columns if c not in SOURCE_FIELDS] + list(SOURCE_FIELDS)]
    frame["start"] = utc_times(frame["start"].astype("float64").to_numpy())
    return frame


CHILDREN_FIELDS = ("children", "children_peak")


def frame_row(record: CellRecord) -> dict:
    """:func:`record_row` with its traced allocations as text (``traced``, ``traced_peak``: one line
    each) and the processes the cell started. Their columns are ``children`` (how many) and
    ``children_peak`` (their GPU peaks summed, bytes; a lower bound unless the driver's accounting
    gave them; 0 for none)."""
    row = record_row(record)
    row["traced"] = "\n".join(map(traced_line, record.traced))
    row["traced_peak"] = "\n".join(map(traced_line, record.traced_peak))
    for d in record.devices:  # how its memory by kind was read, in words
        row[f"gpu{d.index}.kinds_note"] = kinds_note_words(d.kinds_note)
    row["children"] = len(record.children)
    row["children_peak"] = sum(c.peak for c in record.children)
    return row


def samples_frame(
    times: np.ndarray, values: np.ndarray, columns: Sequence[str]
) -> pandas.DataFrame:
    """The samples as a DataFrame: ``time`` as UTC timestamps, then float columns."""
    import pandas as pd

    frame = pd.DataFrame(np.asarray(values, dtype=np.float64), columns=list(columns))
    frame.insert(0, "time", utc_times(times))
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
    paths = {name: out / f"{name}.{fmt}" for name in frames}
    for path in paths.values():  # all or none: not samples.csv then a refusal for cells.csv
        if path.exists():
            raise UsageError(f"{path} exists: export writes new files only; name another folder")
    for name, frame in frames.items():
        if fmt == "csv":
            write_new(paths[name], lambda f, x=frame: x.to_csv(f, index=False), binary=False)
        else:
            write_new(paths[name], lambda f, x=frame: x.to_parquet(f, index=False), binary=True)
    return list(paths.values())


def comparison_frame(changes: Sequence[CellChange], frameworks: Sequence[str]) -> pandas.DataFrame:
    """One row per compared cell (columns: docs/comparing.md)."""
    import pandas as pd

    rows = [_change_row(c, frameworks) for c in changes]
    return pd.DataFrame(rows).convert_dtypes() if rows else pd.DataFrame()


_COMPARED = ("duration", "host_peak", "host_kept", "gpu_peak", "gpu_kept", "util")


def _change_row(change: CellChange, frameworks: Sequence[str]) -> dict[str, object]:
    """``change`` as the comparison frame's row: see the README's "Comparing two runs"."""
    a, b, pair = change.a, change.b, change.pair
    row: dict[str, object] = {
        "kind": pair.kind,
        "cell_a": pair.a.name if pair.a is not None else None,
        "cell_b": pair.b.name if pair.b is not None else None,
        "index_a": pair.a.index if pair.a is not None else None,
        "index_b": pair.b.index if pair.b is not None else None,
        "label": change.label,
        "match": pair.how,
        "similarity": pair.similarity,
        "status_a": a.status if a else None,
        "status_b": b.status if b else None,
    }
    for name in _COMPARED:
        _put(row, name, getattr(a, name) if a else None, getattr(b, name) if b else None)
    for fw in frameworks:
        for k, what in enumerate(("peak", "kept")):
            one = a.frameworks.get(fw, (None, None))[k] if a else None
            two = b.frameworks.get(fw, (None, None))[k] if b else None
            _put(row, f"{fw}_{what}", one, two)
    row["verdict"] = change.verdict
    row["reason"] = change.reason
    return row


def _put(row: dict[str, object], name: str, one, two) -> None:
    row[f"{name}_a"], row[f"{name}_b"] = one, two
    row[f"{name}_change"] = None if one is None or two is None else two - one
