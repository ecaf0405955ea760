"""Reading a recording that is cut short: each table as far as the file goes, and what could
not be read (as facts: ``Damage``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Lost:
    """What a partial read of a recording could not read (none of it: false)."""

    last_sample: float | None = None  # the newest sample read (unix seconds)
    samples_cut: bool = False
    cells_read: int = 0
    cells_cut: bool = False
    cells_unreadable: int = 0
    marks_read: int = 0
    marks_cut: bool = False
    children_cut: bool = False

    def __bool__(self) -> bool:
        return (
            self.samples_cut or self.cells_cut or bool(self.cells_unreadable)
            or self.children_cut or self.marks_cut
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Damage:
    """A recording cut short and read as far as it goes (the words: ``_views/status/damage.py``)."""

    path: Path
    cut_short: str  # how it is cut short, as the file check says it
    session_id: int
    lost: Lost
