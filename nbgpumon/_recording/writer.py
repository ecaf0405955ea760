"""A crash-safe recording of the session in SQLite: samples, cells (and their children), marks.

A writer thread of its own (never the sampler's) wakes every ``flush_interval`` seconds, takes
the timeline's new raw rows and whatever cells (each with its children), children brought up
to date and marks the main thread queued, writes them in one transaction, folds the samples
that have aged past the raw window into buckets in the same transaction (compaction.py) and
commits. The database runs in WAL mode, so a ``kill -9`` of the kernel loses at most the rows
of the last interval and the file stays readable by any SQLite client. A write that fails (a
full disk, an I/O error, a file system turned read-only) stops the recording; a file deleted,
moved or replaced is noticed before the next batch and the recording goes on in a new file at
the path (or stops, when what is there now is not its to write). Either way the thread never
raises into the kernel and never prints: it keeps what it met last (:attr:`state`) and the
notices the main thread takes once (:meth:`take_notices`: facts of ``notices.py``) to be said
at the end of the cell. Schema: docs/recording.md.
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
from .._ledger.traced import traced_as_json
from .._sampling.node_timeline import NodeTimeline
from .._sampling.timeline import Timeline
from .compaction import RAW_SECONDS, Compactor
from .faults import FULL, classify
from .file_check import WRITABLE_HINT, check_record_target, os_reason
from .file_identity import SAME, FileIdentity
from .node_rows import create_node_tables, write_node_samples, write_nodes
from .notices import FileWent, Kept, Notice, RecorderState, RecordingChange, Stopped
from .schema import CELL_COLUMNS, CHILD_COLUMNS, SCHEMA_VERSION, create_schema, device_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._ledger.records import CellRecord
    from .._sources.processes.children import ChildUsage

CELL, CHILDREN, MARK = "cell", "children", "mark"  # what the main thread queues

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
    """Writes one session to ``path``, on its own thread, until :meth:`stop`. It writes the samples
    of ``timeline`` as they arrive (the newest ``raw_seconds`` of them whole, older ones folded into
    1 min buckets; 0 keeps all whole), and the cells and marks it is given."""

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
        self.state = RecorderState(self.path)
        self._timeline, self._info = timeline, info
        self._columns = list(timeline.columns)
        self._by_device = device_columns(self._columns)  # the samples table's row layout
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        # (CELL or CHILDREN, record), in the order queued: a cell's row before its updates
        self._unwritten: tuple[list[tuple[str, CellRecord]], list[tuple[float, str]]] = ([], [])
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cursor = 0
        self._nodes = nodes  # other nodes' samples: written beside this kernel's
        self._node_cursor = 0
        self.rows_written = 0  # samples committed to the file at the path now
        self.cells_written = 0  # and cells and regions
        self._sampled: tuple[float, float] | None = None  # the first and last sample written
        self.node_rows_written = 0
        self.created_folder: Path | None = None  # the file's folder, when this made it
        self._raw_seconds = raw_seconds
        self.failed = False  # set when a fault stopped the recording
        self._notices: list[Notice] = []  # what the main thread says once, at the cell's end
        self._notice_lock = threading.Lock()
        self.session_id = self._open()
        self.compactor = self._compactor()

    def _compactor(self) -> Compactor:
        names = [n for names, _ in self._by_device.values() for n in names]
        return Compactor(self.session_id, names, self._raw_seconds)

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
            reason = os_reason(exc)
            raise RecordingError(
                f"cannot record to {self.path}: {reason}; {WRITABLE_HINT}"
            ) from None
        self.created_folder = self.path.parent if made else None
        return session_id

    def _create_session(self, db: sqlite3.Connection) -> int:
        # One transaction: nothing half made, and a few pages of log rather than a commit per
        # statement (about 250 KiB of it, a good part of a nearly full disk).
        db.execute("BEGIN")
        try:
            session_id = self._insert_session(db)
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise
        return session_id

    def _insert_session(self, db: sqlite3.Connection) -> int:
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

    def add_cell(self, record: CellRecord) -> None:
        """Write ``record`` (its row in ``cells``, and one in ``children`` per child)."""
        self._queue.put((CELL, record))

    def add_mark(self, t: float, label: str) -> None:
        self._queue.put((MARK, (t, label)))

    def update_cell(self, record: CellRecord) -> None:
        """Writes ``record`` again, newer (a child grew or ended after its cell): only its
        children's rows are written again (``INSERT OR REPLACE``), never a second row in
        ``cells``."""
        self._queue.put((CHILDREN, record))

    def stop(self) -> None:
        """Write what is pending, then stop; the file stays complete and readable."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def take_notices(self) -> list[Notice]:
        """What happened to the recording since the last call, to be said once under the
        cell ([] when nothing did). The main thread calls it at each cell's end."""
        with self._notice_lock:
            notices, self._notices = self._notices, []
        return notices

    def stopped(self) -> RecordingChange:
        """What ``%gpumon record off`` says of this recording, after :meth:`stop`: the samples
        in the file, or the fault that had stopped it."""
        fault = self.state.last if self.failed else None
        return RecordingChange(False, self.path, samples=self.rows_written, fault=fault)

    def _say(self, notice: Notice, stops: bool) -> None:
        # From the writer thread: the state at once, the notice when the cell ends.
        self.state = RecorderState(self.path, notice)
        self.failed = self.failed or stops
        with self._notice_lock:
            self._notices.append(notice)

    def _kept(self) -> Kept:
        """What the file at the path holds of this session: its cells, its samples' span."""
        sampled = self._sampled
        return Kept(
            self.cells_written, None if sampled is None else max(sampled[1] - sampled[0], 0.0)
        )

    # -- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        db = identity = None
        try:
            db, identity = self._connect()
            while True:
                stopping = self._stop.wait(FLUSH_INTERVAL)
                what = identity.check()
                if what != SAME:
                    named = identity.still_named()
                    self._let_go(db, identity)
                    db = identity = None
                    db, identity = self._start_over(what, named)
                    if db is None:
                        break
                self._write_or_make_room(db)
                if stopping:
                    break
        except (OSError, sqlite3.Error) as exc:
            # Never raise or print here: the status and the notice say what happened.
            self._say(Stopped(classify(exc, self.path), self.path, self._kept(), str(exc)), True)
        finally:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            if identity is not None:
                identity.close()

    def _write_or_make_room(self, db: sqlite3.Connection) -> None:
        try:
            self.write_pending(db)
        except sqlite3.Error as exc:
            if classify(exc, self.path) != FULL:
                raise
            # The log holds a copy of each page every batch touched since the last checkpoint
            # (SQLite folds it back at 4 MiB), mostly of the same few pages: folding it into
            # the file now and cutting it to nothing frees most of it. Once, then it is full.
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.write_pending(db)

    def _connect(self) -> tuple[sqlite3.Connection, FileIdentity]:
        """The writer's connection and the identity of the file it opened: the descriptor is
        taken first, so a file swapped in between is seen at the first check."""
        identity = FileIdentity(self.path)
        try:
            db = open_database(self.path)
        except BaseException:
            identity.close()
            raise
        return db, identity

    def _let_go(self, db: sqlite3.Connection, identity: FileIdentity) -> None:
        """Close the connection to a file that left its path, its log folded into it first
        (a moved file keeps everything), and remove its -wal and -shm left at the path."""
        with contextlib.suppress(sqlite3.Error):
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with contextlib.suppress(sqlite3.Error):
            db.close()
        identity.remove_leftovers()
        identity.close()

    def _start_over(
        self, what: str, named: bool
    ) -> tuple[sqlite3.Connection | None, FileIdentity | None]:
        """Go on in a new session at the path after the file went (``what``: DELETED, MOVED,
        REPLACED; ``named``: the old file still has a name somewhere); (None, None) when what
        is there now is not nbgpumon's to write."""
        kept = self._kept()
        try:
            self.session_id = self._open()  # checked first: a foreign file is never written
            self.rows_written = self.cells_written = 0
            self._sampled = None
            self.compactor = self._compactor()
            db, identity = self._connect()
        except (RecordingError, OSError, sqlite3.Error) as exc:
            reason = os_reason(exc).removeprefix(f"cannot record to {self.path}: ")
            self._say(FileWent(what, self.path, kept, named, None, reason), stops=True)
            return None, None
        self._say(FileWent(what, self.path, kept, named, self.session_id), stops=False)
        return db, identity

    def write_pending(self, db: sqlite3.Connection) -> None:
        """Write, in one transaction on ``db`` (a connection of :func:`open_database`), what
        arrived since the last call, and fold what aged past the raw window. The writer thread
        calls it every ``FLUSH_INTERVAL``; tests and benchmarks call it directly instead."""
        chunk = self._timeline.since(self._cursor, limit=BATCH_ROWS)
        # a batch that failed keeps its cells and marks for the next try
        cells, marks = self._unwritten
        self._unwritten = ([], [])
        while True:
            try:
                kind, item = self._queue.get_nowait()
            except queue.Empty:
                break
            if kind == MARK:
                marks.append(item)
            else:
                cells.append((kind, item))
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
            for kind, record in cells:
                if kind == CELL:
                    self._write_cell(db, record)
                self._write_children(db, record)
            db.executemany(
                "INSERT INTO marks VALUES (?, ?, ?)", [(self.session_id, t, m) for t, m in marks]
            )
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            self._unwritten = (cells, marks)
            raise
        self._cursor = chunk.end
        self.rows_written += chunk.end - chunk.start
        self.cells_written += sum(1 for kind, _ in cells if kind == CELL)
        if chunk.end > chunk.start:
            first = self._sampled[0] if self._sampled else float(chunk.times[0])
            self._sampled = (first, float(chunk.times[-1]))
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
        # but for its source, which is in the source column alone (up to 64 KiB, not twice),
        # and its children, which have their own rows (a child's update rewrites only those).
        row = record_row(record)
        row["idx"] = record.index  # "index" is a keyword in SQL
        # (schema 7) what it left alive, as JSON: a dict per allocation; "" for none
        row["traced"] = json.dumps(traced_as_json(record.traced)) if record.traced else ""
        values = [row.get(c) for c in CELL_COLUMNS]
        whole = dataclasses.asdict(record)
        del whole["source"], whole["children"]
        db.execute(
            f"INSERT INTO cells (session, {', '.join(CELL_COLUMNS)}, record) "
            f"VALUES ({', '.join('?' * (len(CELL_COLUMNS) + 2))})",
            (self.session_id, *values, json.dumps(whole, default=_plain)),
        )

    def _write_children(self, db: sqlite3.Connection, record: CellRecord) -> None:
        # Keyed by (session, idx, pid, started): a child's newer figures replace its row.
        rows = [
            (
                self.session_id,
                record.index,
                *_child_columns(c),
                json.dumps(dataclasses.asdict(c), default=_plain),
            )
            for c in record.children
        ]
        if rows:
            db.executemany(
                f"INSERT OR REPLACE INTO children (session, idx, {', '.join(CHILD_COLUMNS)}, "
                f"record) VALUES ({', '.join('?' * (len(CHILD_COLUMNS) + 3))})",
                rows,
            )


def _child_columns(c: ChildUsage) -> tuple[Any, ...]:
    """A child's flat columns, in CHILD_COLUMNS' order."""
    return (c.pid, c.command, c.started, c.ended, c.exit_code, c.peak, int(c.exact), c.rank, c.job)


def _roll_back(db: sqlite3.Connection) -> None:
    # SQLite rolls a transaction back itself on some errors (a full disk, an I/O error): a
    # ROLLBACK then fails, and its error must not hide the real one.
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


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
