"""A recorded session read back: ``nbgpumon.load(PATH)``.

The frames have the same shape as the live monitor's (``Monitor.samples_frame()``,
``Monitor.cells_frame()``), so a recording and the session that made it compare equal.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .export import utc_times
from .recorder import device_columns
from .records import CellRecord, record_from_dict
from .timeline import Window

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True)
class Recorded:
    """Everything one session wrote: what the report and the frames are made from."""

    path: Path
    session_id: int
    started: float
    host: str
    gpus: list[dict[str, Any]]
    driver: str
    versions: dict[str, str]
    columns: list[str]  # timeline columns, "gpu0.mem_used" ...
    times: np.ndarray  # float64 unix seconds
    values: np.ndarray  # float64 (samples, columns); NaN where missing
    records: list[CellRecord]
    marks: list[tuple[float, str]]

    # -- the same views the live monitor offers --------------------------------------------
    def samples_frame(self) -> pandas.DataFrame:
        """One row per sample: ``time`` (UTC) and one column per timeline column."""
        return samples_frame(self.times, self.values, self.columns)

    def cells_frame(self) -> pandas.DataFrame:
        from .export import cells_frame

        return cells_frame(self.records)

    def cells(self) -> list[CellRecord]:
        return list(self.records)

    def window(self) -> Window:
        v = self.values.astype(np.float32)
        return Window(self.times, v, v, v)

    def report(self) -> Any:
        """The interactive bqplot report of this session (an ipywidget)."""
        from .report import report_widget

        return report_widget(self)

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        from .advisor import advise, hints_text, recorded_evidence

        return hints_text(advise(recorded_evidence(self)))

    def report_html(self) -> str:
        """A self-contained HTML page of this session (no network needed to open it)."""
        from .report_html import session_html

        return session_html(self)

    def export(self, directory: str | Path, fmt: str = "csv") -> list[Path]:
        """Write ``samples`` and ``cells`` as CSV (or Parquet, with pyarrow) into ``directory``."""
        from .export import write_frames

        return write_frames(
            {"samples": self.samples_frame(), "cells": self.cells_frame()}, directory, fmt
        )


def samples_frame(times: np.ndarray, values: np.ndarray, columns: list[str]) -> pandas.DataFrame:
    """The samples as a DataFrame: ``time`` as UTC timestamps, then float columns."""
    import pandas as pd

    frame = pd.DataFrame(np.asarray(values, dtype=np.float64), columns=list(columns))
    frame.insert(0, "time", utc_times(times))
    return frame


def sessions(path: str | Path) -> list[int]:
    """The ids of the sessions recorded in ``path``, oldest first."""
    with _connect(path) as db:
        return [int(r[0]) for r in db.execute("SELECT id FROM session ORDER BY id")]


def load(path: str | Path, session: int | None = None) -> Recorded:
    """Read one session (the newest by default) of the recording at ``path``."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no recording at {path}")
    with _connect(path) as db:
        row = db.execute(
            "SELECT id, started, host, gpus, driver, versions, columns FROM session "
            + ("WHERE id = ?" if session is not None else "ORDER BY id DESC LIMIT 1"),
            (session,) if session is not None else (),
        ).fetchone()
        if row is None:
            raise ValueError(f"{path} holds no session{'' if session is None else f' {session}'}")
        sid, started, host, gpus, driver, versions, columns_json = row
        columns = json.loads(columns_json)
        times, values = _read_samples(db, sid, columns)
        records = [
            record_from_dict(json.loads(r[0]))
            for r in db.execute("SELECT record FROM cells WHERE session = ? ORDER BY idx", (sid,))
        ]
        marks = [
            (float(t), str(label))
            for t, label in db.execute(
                "SELECT time, label FROM marks WHERE session = ? ORDER BY time", (sid,)
            )
        ]
    return Recorded(
        path=path,
        session_id=int(sid),
        started=float(started),
        host=host or "",
        gpus=json.loads(gpus or "[]"),
        driver=driver or "",
        versions=json.loads(versions or "{}"),
        columns=columns,
        times=times,
        values=values,
        records=records,
        marks=marks,
    )


def _connect(path: str | Path) -> sqlite3.Connection:
    # Read-only: loading a file another kernel is still writing must not disturb it.
    uri = f"file:{Path(path).expanduser().resolve()}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=5)


def _read_samples(
    db: sqlite3.Connection, sid: int, columns: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Samples rows (one per device per time) back into the timeline's wide layout."""
    have = {r[1] for r in db.execute("PRAGMA table_info(samples)")}
    by_device = {
        device: [(i, m) for m, i in zip(names, index, strict=True) if m in have]
        for device, (names, index) in device_columns(columns).items()
    }
    times = np.array(
        [t for (t,) in db.execute(
            "SELECT DISTINCT time FROM samples WHERE session = ? ORDER BY time", (sid,)
        )],
        dtype=np.float64,
    )  # fmt: skip
    values = np.full((len(times), len(columns)), np.nan)
    for device, picked in by_device.items():
        if not picked:
            continue  # a device whose metrics this file has no column for
        quoted = ", ".join(f'"{m}"' for _, m in picked)
        rows = db.execute(
            f"SELECT time, {quoted} FROM samples WHERE session = ? AND device = ? ORDER BY time",
            (sid, device),
        ).fetchall()
        if not rows:
            continue
        block = np.array(rows, dtype=np.float64)  # NULL -> nan
        at = np.searchsorted(times, block[:, 0])
        values[np.ix_(at, [i for i, _ in picked])] = block[:, 1:]
    return times, values
