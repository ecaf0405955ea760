"""Files of ``/proc`` kept open: each read is one ``pread`` (each write one ``write``)
instead of an open, a read and a close. The per-cell hooks read the peak RSS and reset it at
every cell boundary and the sampler reads the RSS every tick; opening ``/proc/self/status``
cost 40 µs a read on the development VM against 8 µs for a ``pread`` on a kept descriptor,
and every system call gives up the GIL. ``ProcFile`` is one file of this process;
``KeptProcFiles`` is a bounded set of other processes' files (the children the process source
follows). Both let go of their descriptors in a forked child and when closed.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref


class ProcFile:
    """``/proc/self/NAME`` opened on first use, and again in a forked child (the descriptor a child
    inherits names its parent's file). A hook run at fork forgets it there, so that a read asks no
    ``getpid`` first."""

    def __init__(self, name: str, flags: int = os.O_RDONLY) -> None:
        self.path = f"/proc/self/{name}"
        self._flags = flags
        self.kept: int | None = None  # the open descriptor (this process's own), None until used
        self._lock = threading.Lock()  # (the sampler's thread and the kernel's both read)
        _files.add(self)

    def _fd(self) -> int:
        fd = self.kept
        if fd is not None:
            return fd
        with self._lock:
            if self.kept is None:
                self.kept = os.open(self.path, self._flags)
            return self.kept

    def read(self, size: int) -> bytes:
        """The file's first ``size`` bytes; raises OSError as ``os.pread`` does."""
        fd = self.kept
        return os.pread(fd if fd is not None else self._fd(), size, 0)

    def write(self, data: bytes) -> None:
        """Write ``data`` (for a control file such as ``clear_refs``); raises OSError."""
        os.write(self._fd(), data)

    def close(self) -> None:
        """Close the descriptor; a later use opens it again."""
        with self._lock:
            fd, self.kept = self.kept, None
        if fd is not None:
            _close_quietly(fd)

    def _forget_after_fork(self) -> None:
        fd, self.kept = self.kept, None
        self._lock = threading.Lock()  # (another thread of the parent may have held it)
        if fd is not None:
            _close_quietly(fd)  # the child's copy of the parent's descriptor


class KeptProcFiles:
    """Descriptors of other processes' ``/proc`` files, by path. Bounded: past ``limit``
    files, a read opens and closes as :func:`read_proc` does."""

    def __init__(self, limit: int = 96) -> None:
        self.limit = limit
        self._fds: dict[str, int] = {}
        _files.add(self)

    def __len__(self) -> int:
        return len(self._fds)

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
            _close_quietly(fd)

    def forget_process(self, pid: int) -> None:
        """Let go of every file of ``pid`` (it exited)."""
        prefix = f"/proc/{pid}/"
        for path in [p for p in self._fds if p.startswith(prefix)]:
            self.forget(path)

    def close(self) -> None:
        """Close every descriptor; a later read opens its file again."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            _close_quietly(fd)

    _forget_after_fork = close  # (the sampler that read them did not survive the fork)


_files: weakref.WeakSet[ProcFile | KeptProcFiles] = weakref.WeakSet()


def _forget_in_child() -> None:
    for file in list(_files):
        file._forget_after_fork()


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def read_proc(path: str, size: int = 65536) -> bytes | None:
    """The first ``size`` bytes of a ``/proc`` file read once (opened and closed), or None
    where it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        _close_quietly(fd)
