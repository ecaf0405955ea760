"""What went wrong when a recording's write failed, as a kind a user acts on (the words:
``_views/status/recorder.py``).

SQLite reports a full disk as SQLITE_FULL, but a file system that turned read-only or a
permission taken away both come back as one I/O error code (the system's errno is not
exposed by Python's sqlite3), so an I/O error is looked into: the folder's file system flags
and free space, and whether the file can still be opened for writing (opened, never written).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

FULL, IO_ERROR, READ_ONLY, PERMISSION, MOVED = "full", "io", "read-only", "permission", "moved"
# SQLite's primary result codes (an extended code keeps them in its low byte)
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 3, 8, 10, 13, 14
_SQLITE_READONLY_DBMOVED = 1032  # "the file was moved or unlinked since it was opened"
_BY_ERRNO = {
    errno.ENOSPC: FULL,
    errno.EDQUOT: FULL,
    errno.EROFS: READ_ONLY,
    errno.EACCES: PERMISSION,
    errno.EPERM: PERMISSION,
    errno.ENOENT: MOVED,
}


def classify(exc: BaseException, path: Path) -> str:
    """The kind of fault ``exc`` (an ``sqlite3.Error`` or ``OSError`` from writing ``path``) is:
    FULL, IO_ERROR, READ_ONLY, PERMISSION or MOVED (the file is gone from its path)."""
    if isinstance(exc, OSError):
        return _BY_ERRNO.get(exc.errno or 0, IO_ERROR)
    code = getattr(exc, "sqlite_errorcode", None)
    if code == _SQLITE_READONLY_DBMOVED:
        return MOVED
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == _SQLITE_FULL or (primary is None and "disk is full" in str(exc)):
        return FULL
    if primary == _SQLITE_PERM:
        return PERMISSION
    if primary in (_SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_CANTOPEN, None):
        return _look_into(path)
    return IO_ERROR


def _look_into(path: Path) -> str:
    """Why writing ``path`` failed with an I/O error, asked of the file system."""
    try:
        fs = os.statvfs(path.parent)
        if fs.f_flag & os.ST_RDONLY:
            return READ_ONLY
        if fs.f_bavail == 0:
            return FULL
    except OSError:
        pass
    try:
        # opening for writing (nothing is written) meets EROFS on a file system the kernel
        # turned read-only after an error, which statvfs does not always flag
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        return _BY_ERRNO.get(exc.errno or 0, IO_ERROR)
    return IO_ERROR
