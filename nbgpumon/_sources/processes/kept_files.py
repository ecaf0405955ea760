"""``/proc`` files of other processes kept open between scans: a read is one ``pread``
instead of an open, a read and a close (a third of the system calls, each of which gives up
the GIL). Bounded: past ``limit`` files, a read opens and closes as :func:`read_proc` does."""

from __future__ import annotations

import contextlib
import os

from ..proc_file import read_proc


class KeptFiles:
    """Open descriptors by path (non-inheritable, as Python makes every descriptor)."""

    def __init__(self, limit: int = 96) -> None:
        self.limit = limit
        self._fds: dict[str, int] = {}

    def read(self, path: str, size: int = 4096) -> bytes | None:
        """The file's first ``size`` bytes, or None where it is gone or cannot be read (a
        process that exited: its kept descriptor answers an error, and is let go)."""
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= self.limit:
                return read_proc(path, size)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                return None
            self._fds[path] = fd
        try:
            return os.pread(fd, size, 0)
        except OSError:
            self.forget(path)
            return None

    def forget(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def forget_process(self, pid: int) -> None:
        """Let go of every file of ``pid`` (it exited)."""
        prefix = f"/proc/{pid}/"
        for path in [p for p in self._fds if p.startswith(prefix)]:
            self.forget(path)

    def close(self) -> None:
        for path in list(self._fds):
            self.forget(path)
