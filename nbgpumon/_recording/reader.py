"""A recorded session read back: what ``nbgpumon.load(PATH)`` is made from.

Only reads: a closed recording is opened immutable, and nothing is written to it or beside it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._foundation.errors import RecordingError
from .._ledger.records import CellRecord, record_from_dict
from .._sampling.node_timeline import NodeTimeline
from .file_check import check_recording, connect_readonly, os_reason
from .node_rows import read_nodes
from .salvage import Damage, Lost, rows_until_damage, whole_pages
from .schema import BUCKETS_SINCE, CHILDREN_SINCE, bucket_columns, device_columns, today_column


@dataclass(frozen=True)
class RecordedSession:
    """Everything one session wrote: what the report and the frames are made from."""

    path: Path
    session_id: int
    started: float
    host: str
    gpus: list[dict[str, Any]]
    driver: str
    versions: dict[str, str]
    columns: list[str]  # timeline columns, "gpu0.nvml.mem_used" ... (schema 1's renamed)
    times: np.ndarray  # float64 unix seconds
    values: np.ndarray  # float64 (samples, columns); NaN where missing
    records: list[CellRecord]  # the recording's cells and regions (``recorded_while``)
    marks: list[tuple[float, str]]  # the marks made while it recorded
    lost: Damage | None = None  # for a file cut short: what could not be read (None: whole)
    nodes: NodeTimeline | None = None  # other nodes' samples, when the session read a cluster
    cluster_server: str = ""  # the Prometheus server they came from
    # Schema 3 folds samples older than the raw window into buckets: their rows come first in
    # ``times`` (each bucket's start) and ``values`` (its means); ``low`` and ``high`` hold their
    # minima and maxima (the values themselves for a raw sample), ``sample_counts`` how many
    # raw samples each row stands for (1: a raw sample), ``buckets`` how many of the first rows
    # are buckets. None: every row is a raw sample.
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    sample_counts: np.ndarray | None = None
    buckets: int = 0
    # The kernel's ledger from before the recording started, which the file keeps too (the
    # timeline has no samples for it): not the recording's, and no view shows it as such.
    earlier: list[CellRecord] = field(default_factory=list)
    earlier_marks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def earlier_cells(self) -> int:
        """How many cells (not regions) of ``earlier`` there are: what every view counts."""
        return sum(r.kind == "cell" for r in self.earlier)


def recorded_while(
    records: list[CellRecord], marks: list[tuple[float, str]], started: float
) -> tuple[list[CellRecord], list[tuple[float, str]], list[CellRecord], list[tuple[float, str]]]:
    """The one rule for what a recording holds: the cells and regions that ended after it
    started, and the marks made since; then the kernel's records and marks from before.
    One that straddles the start (the ``%gpumon record`` cell itself, a cell that started
    recording from inside) is its own, its figures its whole run's. Every view, count and
    comparison of a recording takes the first two."""
    own = [r.start + r.duration >= started for r in records]
    own_marks = [t >= started for t, _ in marks]
    return (
        [r for r, mine in zip(records, own, strict=True) if mine],
        [m for m, mine in zip(marks, own_marks, strict=True) if mine],
        [r for r, mine in zip(records, own, strict=True) if not mine],
        [m for m, mine in zip(marks, own_marks, strict=True) if not mine],
    )


def sessions(path: str | Path) -> list[int]:
    """The ids of the sessions recorded in ``path``, oldest first."""
    path = Path(path).expanduser()
    with _reading(path) as (db, cut_short):
        rows, error = rows_until_damage(db, "SELECT id FROM session")
    if error and not cut_short:
        raise RecordingError(f"{path} is damaged ({error}); it can't be read")
    return sorted(int(r[0]) for r in rows)


def load(path: str | Path, session: int | None = None) -> RecordedSession:
    """Read one session (the newest by default) of the recording at ``path``.

    Raises :class:`RecordingError` (:class:`RecordingNotFound` when nothing is there) for a
    file that is not a readable recording. A file that is cut short loads as far as it goes;
    ``lost`` then says what could not be read. Nothing is written to the file or beside it.
    """
    path = Path(path).expanduser()
    with _reading(path) as (db, cut_short):
        return _read_session(db, path, session, cut_short)


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[tuple[sqlite3.Connection, str]]:
    """A read-only connection to the recording at ``path``, and how it is cut short ("" when
    whole); SQLite's and the system's errors on the way become one RecordingError."""
    cut_short = check_recording(path)
    try:
        with (
            whole_pages(path) if cut_short else contextlib.nullcontext(path) as readable,
            contextlib.closing(connect_readonly(readable, salvage=bool(cut_short))) as db,
        ):
            yield db, cut_short
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {os_reason(exc)}") from None
    except sqlite3.DatabaseError as exc:
        raise RecordingError(f"{path} is damaged ({cut_short or exc}); it can't be read") from None


def _read_session(
    db: sqlite3.Connection, path: Path, session: int | None, cut_short: str
) -> RecordedSession:
    schema = (
        "schema" if "schema" in {r[1] for r in db.execute("PRAGMA table_info(session)")} else "1"
    )
    row = db.execute(
        f"SELECT id, started, host, gpus, driver, versions, columns, {schema} FROM session "
        + ("WHERE id = ?" if session is not None else "ORDER BY id DESC LIMIT 1"),
        (session,) if session is not None else (),
    ).fetchone()
    if row is None and session is None:
        raise RecordingError(f"{path} holds no nbgpumon session")
    if row is None:
        have = ", ".join(str(i) for (i,) in db.execute("SELECT id FROM session ORDER BY id"))
        raise RecordingError(f"{path} holds no session {session}; it has {have}")
    sid, started, host, gpus, driver, versions, columns_json, version = row
    try:
        started, columns = float(started), json.loads(columns_json)
        version = int(version or 1)  # NULL: a session written by schema 1
        gpus, versions = json.loads(gpus or "[]"), json.loads(versions or "{}")
    except (TypeError, ValueError):
        raise RecordingError(f"{path} is damaged: session {sid}'s row can't be read") from None
    samples, samples_error = _read_samples(db, sid, columns, version, salvage=bool(cut_short))
    times = samples.times
    if version < 2:
        columns = [today_column(c) for c in columns]  # one naming for every view
    # a file of schema 1 to 3 has no source column until a later session is recorded into it
    has_source = "source" in {r[1] for r in db.execute("PRAGMA table_info(cells)")}
    cell_rows, cells_error = rows_until_damage(
        db,
        f"SELECT idx, record, {'source' if has_source else 'NULL'} FROM cells WHERE session = ?",
        (sid,),
    )
    children, children_error = _children(db, sid, version)
    records, unreadable = _records(cell_rows, children)
    mark_rows, marks_error = rows_until_damage(
        db, "SELECT time, label FROM marks WHERE session = ?", (sid,)
    )
    try:
        marks = sorted((float(t), str(label)) for t, label in mark_rows)
    except (TypeError, ValueError):  # garbage that SQLite reads as text
        marks, marks_error = [], marks_error or "a mark's time holds text"
    nodes, server, nodes_error = read_nodes(db, sid)
    samples_error = samples_error or nodes_error
    if (samples_error or cells_error or children_error or marks_error or unreadable) and (
        not cut_short
    ):
        # Only a file cut short is read in part: elsewhere, what SQLite did return may be wrong.
        why = samples_error or cells_error or children_error or marks_error
        why = why or "a cell's record is unreadable"
        raise RecordingError(f"{path} is damaged ({why}); it can't be read")
    damage = None
    if cut_short:
        lost = Lost(
            last_sample=float(times[-1]) if len(times) else None,
            samples_cut=bool(samples_error),
            cells_read=len(records),
            cells_cut=bool(cells_error),
            children_cut=bool(children_error),
            cells_unreadable=unreadable,
            marks_read=len(marks),
            marks_cut=bool(marks_error),
        )
        damage = Damage(path, cut_short, int(sid), lost)
    own, own_marks, earlier, earlier_marks = recorded_while(records, marks, started)
    return RecordedSession(
        path=path,
        session_id=int(sid),
        started=started,
        host=host or "",
        gpus=gpus,
        driver=driver or "",
        versions=versions,
        columns=columns,
        times=times,
        values=samples.mean,
        records=own,
        marks=own_marks,
        lost=damage,
        nodes=nodes,
        cluster_server=server,
        low=samples.low,
        high=samples.high,
        sample_counts=samples.counts,
        buckets=samples.buckets,
        earlier=earlier,
        earlier_marks=earlier_marks,
    )


def _children(
    db: sqlite3.Connection, sid: int, version: int
) -> tuple[dict[int, list[dict]] | None, str]:
    """The children rows of session ``sid`` as {cell idx: [ChildUsage fields], by start}, and
    the error that stopped the read ("" when all were read). None for a session of a schema
    before 5, whose records keep what their JSON says (no children)."""
    if version < CHILDREN_SINCE:
        return None, ""
    rows, error = rows_until_damage(
        db, "SELECT idx, started, record FROM children WHERE session = ?", (sid,)
    )
    by_cell: dict[int, list[tuple[float, dict]]] = {}
    for idx, started, text in rows:
        try:
            by_cell.setdefault(int(idx), []).append((float(started), json.loads(text)))
        except (TypeError, ValueError):  # garbage that SQLite reads as text
            error = error or "a child's row is unreadable"
    ordered = {i: [f for _, f in sorted(kids, key=lambda k: k[0])] for i, kids in by_cell.items()}
    return ordered, error


def _records(
    rows: list[tuple], children: dict[int, list[dict]] | None = None
) -> tuple[list[CellRecord], int]:
    """The cells' records in ledger order, and how many rows held no readable record. A cell
    run again and again keeps one copy of its source, as in the live ledger. ``children``
    (schema 5) gives each its children by its idx."""
    records, unreadable, sources = [], 0, {}
    for idx, text, source in sorted(rows, key=lambda r: (r[0] is None, r[0] or 0)):
        try:
            fields = json.loads(text)
            if isinstance(source, str):  # NULL: a cell of schema 1 to 3 keeps source ""
                fields["source"] = sources.setdefault(source, source)
            if children is not None:
                fields["children"] = children.get(idx, [])
            records.append(record_from_dict(fields))
        except (TypeError, ValueError, KeyError):
            unreadable += 1
    return records, unreadable


def _read_samples(
    db: sqlite3.Connection, sid: int, columns: list[str], version: int, salvage: bool
) -> tuple[Rows, str]:
    """The session's samples in the timeline's wide layout, its buckets (schema 3) first, and
    the error that stopped the read ("" when all were read)."""
    width = len(columns)
    by_device = device_columns(columns, version)
    raw_layout = {
        d: list(zip(names, index, strict=True)) for d, (names, index) in by_device.items()
    }
    times, raw, error = _pivot(db, "samples", sid, raw_layout, width, salvage)
    rows = Rows(times, raw, raw, raw, np.ones(len(times), dtype=np.int64))
    if version < BUCKETS_SINCE:
        return rows, error
    # per device: each column's mean, min and max into three blocks, then the sample count
    bucket_layout = {
        device: [
            (name, i + k * width)
            for name, i in zip(names, index, strict=True)
            for k, name in enumerate(bucket_columns(name))
        ]
        + [("samples", 3 * width), ("seconds", 3 * width + 1)]
        for device, (names, index) in by_device.items()
    }
    starts, wide, bucket_error = _pivot(
        db, "sample_buckets", sid, bucket_layout, 3 * width + 2, salvage
    )
    # whole buckets before the first raw sample only: in a file cut short by a copy, a bucket
    # may be missing, but one never stands beside the samples it folded
    first_raw = times[0] if len(times) else np.inf
    keep = starts + np.nan_to_num(wide[:, 3 * width + 1]) <= first_raw
    starts, wide = starts[keep], wide[keep]
    counts = np.nan_to_num(wide[:, 3 * width]).astype(np.int64)
    mean, low, high = (wide[:, k * width : (k + 1) * width] for k in range(3))
    return (
        Rows(
            np.concatenate([starts, times]),
            np.concatenate([mean, raw]),
            np.concatenate([low, raw]),
            np.concatenate([high, raw]),
            np.concatenate([counts, rows.counts]),
            buckets=len(starts),
        ),
        error or bucket_error,
    )


@dataclass(frozen=True)
class Rows:
    """A session's samples, wide: raw rows (``low == mean == high``, ``counts`` 1) and, before
    them, bucket rows stamped with their start."""

    times: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    counts: np.ndarray  # raw samples each row stands for
    buckets: int = 0  # how many of the first rows are buckets


def _pivot(
    db: sqlite3.Connection,
    table: str,
    sid: int,
    layout: dict[str, list[tuple[str, int]]],
    width: int,
    salvage: bool,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Rows of ``table`` (one per device per time) into one wide row per time: ``layout``
    says, per device, which table column goes to which output column. The error that stopped
    the read ("" when all were read)."""
    have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    # In a file cut short the index and the table end at different places: read both ways.
    ways = ("", " NOT INDEXED") if salvage else ("",)
    blocks, error = [], ""
    for device, wanted in layout.items():
        picked = [(i, m) for m, i in wanted if m in have]
        select = "SELECT time" + "".join(f', "{m}"' for _, m in picked) + f" FROM {table}"
        rows = []
        for way in ways:
            got, failed = rows_until_damage(
                db, f"{select}{way} WHERE session = ? AND device = ?", (sid, device)
            )
            rows += got
            error = error or failed
        try:
            block = np.array(rows, dtype=np.float64).reshape(-1, 1 + len(picked))  # NULL: nan
        except (TypeError, ValueError):  # garbage that SQLite reads as text
            block, error = np.empty((0, 1 + len(picked))), error or "a sample holds text"
        if salvage:  # the rows both ways read, once each
            block = block[np.unique(block[:, 0], return_index=True)[1]]
        blocks.append(([i for i, _ in picked], block))
    times = np.unique(np.concatenate([b[:, 0] for _, b in blocks] or [np.empty(0)]))
    values = np.full((len(times), width), np.nan)
    for index, block in blocks:
        at = np.searchsorted(times, block[:, 0])
        values[np.ix_(at, index)] = block[:, 1:]
    return times, values, error
