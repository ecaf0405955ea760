"""Whether the file a recording writes is still the one at its path.

A file deleted, moved or replaced while it is recorded to stays open: SQLite would write on
into a file nobody can open any more, or stop with its own words. The writer holds a
descriptor of the file it opened and, before each batch, compares that file's identity
(``st_dev``, ``st_ino``) with the path's: two ``stat`` calls, a few microseconds a batch.
"""

from __future__ import annotations

import os
from pathlib import Path

SAME, DELETED, MOVED, REPLACED = "same", "deleted", "moved", "replaced"


class FileIdentity:
    """The identity of the file at ``path`` when it was opened; :meth:`check` says whether the
    path still names it. Holds a read-only descriptor (nothing is ever written through it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        opened = os.fstat(self._fd)
        self._id = (opened.st_dev, opened.st_ino)
        # SQLite's -wal and -shm beside it, once they exist: what may be removed as this
        # file's leftovers after it is gone from the path (nothing of another file's)
        self._companions: dict[Path, tuple[int, int]] = {}

    def matches(self, path_stat: os.stat_result) -> bool:
        """Whether ``path_stat`` (an ``os.stat`` of some path) is of this file."""
        return (path_stat.st_dev, path_stat.st_ino) == self._id

    def check(self) -> str:
        """SAME, or what became of the file: DELETED (no name left), MOVED (it has another
        name now and the path names nothing) or REPLACED (the path names another file)."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is not None and self.matches(now):
            if len(self._companions) < 2:
                self._note_companions()
            return SAME
        if now is not None:
            return REPLACED
        return DELETED if os.fstat(self._fd).st_nlink == 0 else MOVED

    def still_named(self) -> bool:
        """Whether the file opened still has a name somewhere (moved, not deleted)."""
        return os.fstat(self._fd).st_nlink > 0

    def _note_companions(self) -> None:
        for suffix in ("-wal", "-shm"):
            name = self.path.with_name(self.path.name + suffix)
            try:
                found = os.stat(name)
            except OSError:
                continue
            self._companions[name] = (found.st_dev, found.st_ino)

    def remove_leftovers(self) -> None:
        """Remove this file's -wal and -shm left at the path after the file went: a new file
        made there would read the old log as its own. Only the very files noted beside it."""
        for name, identity in self._companions.items():
            try:
                found = os.stat(name)
                if (found.st_dev, found.st_ino) == identity:
                    os.unlink(name)
            except OSError:
                continue

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
