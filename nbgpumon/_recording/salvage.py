"""Reading a recording that is cut short: each table as far as the file goes, and one line
saying what could not be read.

SQLite hands out rows until a query reaches a page the file no longer has, then raises; the
rows before that are intact, so they are kept. That holds for whole pages only: a page cut in
the middle reads as one whose rows end in zeros, so such a file is read from a copy of its
whole pages.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._foundation.units import format_utc
from .file_check import page_size


@contextlib.contextmanager
def whole_pages(path: Path) -> Iterator[Path]:
    """``path`` itself when it ends on a page boundary, else a temporary copy of its whole
    pages, deleted afterwards; ``path`` is only read."""
    size = path.stat().st_size
    whole = size - size % page_size(path)
    if whole == size:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="nbgpumon-") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        os.truncate(copy, whole)
        yield copy


def rows_until_damage(
    db: sqlite3.Connection, sql: str, args: Sequence[Any] = ()
) -> tuple[list[tuple], str]:
    """The rows ``sql`` returns as far as the file can be read, and the error that stopped it
    ("" when every row was read). No ORDER BY: a sort reads everything before the first row."""
    try:
        return db.execute(sql, args).fetchall(), ""
    except sqlite3.DatabaseError as exc:
        error = str(exc)
    rows: list[tuple] = []  # again, one row at a time, to keep those before the damage
    with contextlib.suppress(sqlite3.DatabaseError):
        for row in db.execute(sql, args):
            rows.append(row)
    return rows, error


def lost_parts(
    last_sample: float | None = None,
    samples_cut: bool = False,
    cells_read: int = 0,
    cells_cut: bool = False,
    cells_unreadable: int = 0,
    marks_read: int = 0,
    marks_cut: bool = False,
    children_cut: bool = False,
) -> str:
    """What a partial read lost, as a phrase ("" for nothing): "samples after 2026-12-01
    12:03:05 UTC and the cells after the first 4"."""
    parts = []
    if samples_cut:
        parts.append(
            "all samples" if last_sample is None else f"samples after {format_utc(last_sample)}"
        )
    if cells_cut:
        parts.append(f"the cells after the first {cells_read}" if cells_read else "all cells")
    elif cells_unreadable:
        parts.append(f"{cells_unreadable} cell{'s' if cells_unreadable > 1 else ''}")
    if children_cut:
        parts.append("some cells' children")
    if marks_cut:
        parts.append(f"the marks after the first {marks_read}" if marks_read else "all marks")
    if len(parts) < 2:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} and {parts[-1]}"
