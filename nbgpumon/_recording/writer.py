"""A crash-safe recording of the session in SQLite: samples, cells, marks.

A writer thread of its own (never the sampler's) wakes every ``flush_interval`` seconds, takes
the timeline's new raw rows and whatever cells and marks the main thread queued, writes them in
one transaction, folds the samples that have aged past the raw window into buckets in the same
transaction (compaction.py) and commits. The database runs in WAL mode, so a ``kill -9`` of the
kernel loses at most the rows of the last interval and the file stays readable by any SQLite
client. A write that fails (disk full, the file removed) stops the recording with a status
line; it never raises into the kernel and never prints from the thread. Schema: docs/recording.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._foundation.clock import wall_clock
from .._foundation.errors import RecordingError
from .._ledger.rows import record_row
from .._sampling.node_timeline import NodeTimeline
from .._sampling.timeline import Timeline
from .compaction import RAW_SECONDS, Compactor
from .file_check import WRITABLE_HINT, check_record_target, os_reason
from .node_rows import create_node_tables, write_node_samples, write_nodes
from .schema import CELL_COLUMNS, SCHEMA_VERSION, create_schema, device_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._ledger.records import CellRecord

FLUSH_INTERVAL = 0.5  # seconds between commits: a kill loses at most this much, plus one write
BATCH_ROWS = 20_000  # timeline rows per transaction at most (a backlog is written in pieces)
# The log is truncated back to this after a checkpoint, so a backlog's big transactions don't
# leave a large -wal file beside the recording for the rest of the session.
WAL_LIMIT = 8 * 2**20


def open_database(path: Path) -> sqlite3.Connection:
    """The writer's connection; only for a file check_record_target accepted (WAL is a write)."""
    db = sqlite3.connect(path, timeout=5, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed batch survives a kill
        db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
    except sqlite3.Error:
        db.close()
        raise
    return db


class RecordingWriter:
    """Writes one session to ``path``, on its own thread, until :meth:`stop`: the samples of
    ``timeline`` as they arrive (the newest ``raw_seconds`` of them whole, older ones folded
    into 1 min buckets; 0 keeps all whole), and the cells and marks it is given."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeline: Timeline,
        info: dict[str, Any],
        nodes: Callable[[], tuple[NodeTimeline, str] | None] = lambda: None,
        raw_seconds: float = RAW_SECONDS,
    ) -> None:
        """Check ``path`` and create this session's row in it; raises :class:`RecordingError`
        (a path that is empty, not writable, or a file that is not a recording) with nothing
        written."""
        if not os.fspath(path).strip():
            raise RecordingError(
                f"cannot record to {os.fspath(path)!r}: the path is empty; name a file, e.g. "
                "%gpumon record run.sqlite"
            )
        self.path = Path(path).expanduser()
        self.status = ""
        self._timeline, self._info = timeline, info
        self._columns = list(timeline.columns)
        self._by_device = device_columns(self._columns)  # the samples table's row layout
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cursor = 0
        self._nodes = nodes  # other nodes' samples: written beside this kernel's
        self._node_cursor = 0
        self.rows_written = 0
        self.node_rows_written = 0
        self.created_folder: Path | None = None  # the file's folder, when this made it
        self.session_id = self._open()
        names = [n for names, _ in self._by_device.values() for n in names]
        self.compactor = Compactor(self.session_id, names, raw_seconds)

    def _open(self) -> int:
        """Create the file and this session's row now, on the caller's thread, so that a path
        that can't be written is reported at once."""
        check_record_target(self.path)  # a foreign or damaged file: refused, nothing written
        existed, made = self.path.exists(), []
        try:
            made = _missing_folders(self.path.parent)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = open_database(self.path)
            try:
                session_id = self._create_session(db)
            finally:
                db.close()
        except (OSError, sqlite3.Error) as exc:
            # Leave nothing behind: the file and the folders this attempt made go again.
            if not existed:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
            raise RecordingError(
                f"cannot record to {self.path}: {reason}; {WRITABLE_HINT}"
            ) from None
        self.created_folder = self.path.parent if made else None
        return session_id

    def _create_session(self, db: sqlite3.Connection) -> int:
        create_schema(db, self._columns)
        create_node_tables(db)
        info = self._info
        cur = db.execute(
            "INSERT INTO session (started, host, pid, gpus, driver, versions, columns, schema) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                wall_clock(),
                info["host"],
                info["pid"],
                json.dumps(info["gpus"]),
                info["driver"],
                json.dumps(info["versions"]),
                json.dumps(self._columns),
                SCHEMA_VERSION,
            ),
        )
        return int(cur.lastrowid or 0)

    # -- main thread ----------------------------------------------------------------------
    def start(self, records: Sequence[CellRecord], marks: Sequence[tuple[float, str]]) -> None:
        """Write from now on; ``records`` and ``marks`` made before the recording came along."""
        self._cursor = self._timeline.cursor
        cluster = self._nodes()
        self._node_cursor = cluster[0].cursor if cluster is not None else 0
        for record in records:
            self.add_cell(record)
        for t, label in marks:
            self.add_mark(t, label)
        self._thread = threading.Thread(target=self._run, name="nbgpumon-recorder", daemon=True)
        self._thread.start()
        self.status = f"recording to {self.path}"

    def add_cell(self, record: CellRecord) -> None:
        self._queue.put(("cell", record))

    def add_mark(self, t: float, label: str) -> None:
        self._queue.put(("mark", (t, label)))

    def stop(self) -> None:
        """Write what is pending, then stop; the file stays complete and readable."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        db = None
        try:
            db = open_database(self.path)
            while True:
                stopping = self._stop.wait(FLUSH_INTERVAL)
                self.write_pending(db)
                if stopping:
                    break
        except (OSError, sqlite3.Error) as exc:
            # Never raise or print here: the status says what happened and what to do.
            self.status = (
                f"recording to {self.path} stopped: {exc}; what was written before is intact "
                "(%gpumon record PATH starts a new one)"
            )
        finally:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()

    def write_pending(self, db: sqlite3.Connection) -> None:
        """Write, in one transaction on ``db`` (a connection of :func:`open_database`), what
        arrived since the last call, and fold what aged past the raw window. The writer thread
        calls it every ``FLUSH_INTERVAL``; tests and benchmarks call it directly instead."""
        chunk = self._timeline.since(self._cursor, limit=BATCH_ROWS)
        cells, marks = [], []
        while True:
            try:
                kind, item = self._queue.get_nowait()
            except queue.Empty:
                break
            (cells if kind == "cell" else marks).append(item)
        cluster = self._nodes()
        node_columns, node_chunk = (
            cluster[0].since_with_columns(self._node_cursor, limit=BATCH_ROWS)
            if cluster is not None
            else ((), None)
        )
        new_nodes = node_chunk is not None and node_chunk.end > node_chunk.start
        if chunk.end == chunk.start and not cells and not marks and not new_nodes:
            return
        db.execute("BEGIN")
        try:
            if chunk.end > chunk.start:
                self._write_samples(db, chunk.times, chunk.values)
                self.compactor.fold(db, float(chunk.times[-1]))
            if new_nodes and cluster is not None and node_chunk is not None:
                written = write_node_samples(db, self.session_id, node_columns, node_chunk)
                write_nodes(db, self.session_id, cluster[0].gpus(), cluster[1])
            for record in cells:
                self._write_cell(db, record)
            db.executemany(
                "INSERT INTO marks VALUES (?, ?, ?)", [(self.session_id, t, m) for t, m in marks]
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._cursor = chunk.end
        self.rows_written += chunk.end - chunk.start
        if new_nodes and node_chunk is not None:
            self._node_cursor = node_chunk.end
            self.node_rows_written += written

    def _write_samples(self, db: sqlite3.Connection, times: np.ndarray, values: np.ndarray) -> None:
        # One row per device per sample: gpu<N> rows hold GPU metrics, the host row host ones.
        for device, (names, index) in self._by_device.items():
            placeholders = ", ".join("?" * (3 + len(names)))
            quoted = ", ".join(f'"{n}"' for n in names)
            block = values[:, index].astype(np.float64)
            rows = [
                (self.session_id, float(t), device, *(None if v != v else v for v in row))
                for t, row in zip(times.tolist(), block.tolist(), strict=True)
            ]
            db.executemany(
                f"INSERT INTO samples (session, time, device, {quoted}) VALUES ({placeholders})",
                rows,
            )

    def _write_cell(self, db: sqlite3.Connection, record: CellRecord) -> None:
        # Flat columns for any SQLite client; the whole record as JSON for nbgpumon.load(),
        # but for its source, which is in the source column alone (up to 64 KiB, not twice).
        row = record_row(record)
        row["idx"] = record.index  # "index" is a keyword in SQL
        values = [row.get(c) for c in CELL_COLUMNS]
        whole = dataclasses.asdict(record)
        del whole["source"]
        db.execute(
            f"INSERT INTO cells (session, {', '.join(CELL_COLUMNS)}, record) "
            f"VALUES ({', '.join('?' * (len(CELL_COLUMNS) + 2))})",
            (self.session_id, *values, json.dumps(whole, default=_plain)),
        )


def _missing_folders(folder: Path) -> list[Path]:
    """The folders that ``folder.mkdir(parents=True)`` would create, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _plain(value: Any) -> Any:
    """JSON for numpy scalars that may sit in a record row."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
