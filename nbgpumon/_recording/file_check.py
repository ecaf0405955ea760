"""What is at a recording's path, found out without writing a byte.

A file is an nbgpumon recording when it carries the marker (``PRAGMA application_id``, see
schema.py) or, made before the marker existed, has exactly schema version 1's tables. The
recorder adds sessions only to a new file or a recording; ``load`` reads only recordings. Both
ask here first, and every question is asked through a read-only connection.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .._foundation.errors import RecordingError, RecordingNotFound
from .schema import APPLICATION_ID, SCHEMA_VERSION, UNMARKED_LAYOUT

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite file
NEW_FILE_HINT = "record to a new file instead"
WRITABLE_HINT = "pick a writable path, e.g. %gpumon record ~/gpumon.sqlite"


@dataclass(frozen=True)
class _Found:
    """What :func:`_examine` found at a path."""

    kind: str  # "absent", "folder", "empty" (0 bytes), "other", "damaged" or "recording"
    why: str = ""  # for "other" and "damaged": what is wrong, as a clause
    cut_short: str = ""  # for a recording: how much of the file is missing ("" if none is)
    writable: bool = False  # a recording nbgpumon may add a session to (marked or 0.1.0's)
    schema_version: int = 0


def check_record_target(path: Path) -> None:
    """Return when ``path`` is new (absent or 0 bytes) or a recording to add a session to;
    raise :class:`RecordingError` otherwise. Reads only."""
    try:
        found = _examine(path)
    except OSError as exc:
        raise RecordingError(
            f"cannot record to {path}: {os_reason(exc)}; {WRITABLE_HINT}"
        ) from None
    if found.kind in ("absent", "empty"):
        return
    if found.kind == "folder":
        raise RecordingError(
            f"cannot record to {path}: it is a folder; name a file in it, e.g. "
            f"%gpumon record {path / 'run.sqlite'}"
        )
    if found.kind == "damaged" or found.cut_short:
        why = found.why or found.cut_short
        raise RecordingError(f"cannot record to {path}: it is damaged ({why}); {NEW_FILE_HINT}")
    if found.kind == "recording" and found.schema_version > SCHEMA_VERSION:
        raise RecordingError(
            f"cannot record to {path}: a newer nbgpumon wrote it (schema version "
            f"{found.schema_version}, this one writes {SCHEMA_VERSION}); {NEW_FILE_HINT}"
        )
    if found.kind == "recording" and found.writable:
        return
    why = found.why or "its tables differ from those nbgpumon writes"
    raise RecordingError(
        f"cannot record to {path}: it is not an nbgpumon recording ({why}); {NEW_FILE_HINT}"
    )


def check_recording(path: Path) -> str:
    """Return how the recording at ``path`` is cut short ("" when it is whole); raise
    :class:`RecordingError` (:class:`RecordingNotFound` when nothing is there) when it is not
    a recording that can be read. Reads only."""
    try:
        found = _examine(path)
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {os_reason(exc)}") from None
    if found.kind == "absent":
        raise RecordingNotFound(f"no recording at {path}")
    if found.kind == "folder":
        raise RecordingError(f"{path} is a folder, not a recording; name the file in it")
    if found.kind == "damaged":
        raise RecordingError(f"{path} is damaged ({found.why}); it can't be read")
    if found.kind != "recording":
        why = found.why or "it is empty: 0 bytes"
        raise RecordingError(
            f"{path} is not an nbgpumon recording ({why}); load a file %gpumon record wrote"
        )
    return found.cut_short


def connect_readonly(path: Path, salvage: bool = False) -> sqlite3.Connection:
    """A connection that cannot write to ``path`` or leave files beside it.

    A closed file (no write-ahead log with content beside it) is opened ``immutable``: plain
    read-only SQLite would create empty ``-wal`` and ``-shm`` files next to a WAL-mode file and
    leave them there. A recording another kernel is writing (its log has content) is opened
    read-only through that log, so its newest samples are seen. ``salvage``: read a file that
    is shorter than its header says, up to where it ends.
    """
    query = "mode=ro" if _being_written(path) else "mode=ro&immutable=1"
    db = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, timeout=5)
    if salvage:
        # Lets SQLite open a file shorter than its header says (it refuses otherwise); reads
        # then stop with an error where the file ends. Nothing is written: read-only.
        db.execute("PRAGMA writable_schema = ON")
    return db


def _examine(path: Path) -> _Found:
    """Look at ``path`` without writing anything. Raises ``OSError`` when it can't be read."""
    if not path.exists():
        return _Found("absent")
    if path.is_dir():
        return _Found("folder")
    cut_short = ""
    if not _being_written(path):  # else its header may be behind its log: ask SQLite only
        with path.open("rb") as f:
            header = f.read(100)
        if not header:
            return _Found("empty")
        if not header.startswith(SQLITE_MAGIC):
            return _Found("other", "it is not an SQLite file")
        cut_short = _cut_short(header, path.stat().st_size)
    try:
        db = connect_readonly(path, salvage=bool(cut_short))
        try:
            application_id, tables, version = _identity(db)
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return _Found("damaged", cut_short or str(exc))
    if application_id == APPLICATION_ID or (version == 1 and _has_unmarked_layout(tables)):
        return _Found("recording", "", cut_short, True, version)
    if application_id != 0:
        why = f"an SQLite file of another program, application_id {application_id}"
        return _Found("other", why)
    if _has_the_columns_load_reads(tables):
        # 0.1.0's tables and more (someone added one): read it, but never add to it
        return _Found("recording", "", cut_short, False, version)
    if all(name in tables for name in UNMARKED_LAYOUT):
        return _Found("other", "its tables differ from those nbgpumon writes")
    return _Found("other", _describe_tables(tables))


def os_reason(exc: BaseException) -> str:
    """An OSError as a short clause: "Permission denied (/proc/x)", not its repr; any other
    error as its message."""
    if not isinstance(exc, OSError):
        return str(exc)
    if exc.strerror and exc.filename:
        return f"{exc.strerror} ({exc.filename})"
    return exc.strerror or str(exc)


def _being_written(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def _cut_short(header: bytes, size: int) -> str:
    """How much is missing, when the header says the file is longer than it is."""
    if len(header) < 100:
        return f"the file is cut short: {size:,} bytes, not even SQLite's 100-byte header"
    pages = int.from_bytes(header[28:32], "big")
    full = pages * _page_size(header)
    # the header's page count is trusted only when written with the change counter (SQLite's rule)
    if header[24:28] != header[92:96] or size >= full:
        return ""
    return f"the file is cut short: {size:,} of {full:,} bytes"


def page_size(path: Path) -> int:
    """The page size, in bytes, that the SQLite file at ``path`` says it has."""
    with path.open("rb") as f:
        return _page_size(f.read(100))


def _page_size(header: bytes) -> int:
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else max(size, 512)  # 1 stands for 65536; 512 is the smallest


def _identity(db: sqlite3.Connection) -> tuple[int, dict[str, tuple[str, ...]], int]:
    """The file's application_id, its tables' columns and the recorded schema version."""
    (application_id,) = db.execute("PRAGMA application_id").fetchone()
    names = [
        name
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    tables = {name: _columns(db, name) for name in names}
    version = 0
    if tables.get("meta") == ("key", "value"):
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else 0
    return int(application_id), tables, version


def _has_unmarked_layout(tables: dict[str, tuple[str, ...]]) -> bool:
    """Exactly the tables nbgpumon 0.1.0 made (samples: its first columns, then metrics)."""
    if set(tables) != set(UNMARKED_LAYOUT):
        return False
    return all(
        tables[name] == columns if name != "samples" else tables[name][:3] == columns
        for name, columns in UNMARKED_LAYOUT.items()
    )


def _has_the_columns_load_reads(tables: dict[str, tuple[str, ...]]) -> bool:
    return all(set(UNMARKED_LAYOUT[name]) <= set(tables.get(name, ())) for name in UNMARKED_LAYOUT)


def _columns(db: sqlite3.Connection, table: str) -> tuple[str, ...]:
    quoted = table.replace('"', '""')
    return tuple(r[1] for r in db.execute(f'PRAGMA table_info("{quoted}")'))


def _describe_tables(tables: dict[str, tuple[str, ...]]) -> str:
    if not tables:
        return "an SQLite file with no tables"
    listed = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
    return f"an SQLite file with the tables {listed}"
