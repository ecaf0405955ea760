"""Files of ``/proc`` kept open: each read is one ``pread`` (each write one ``write``)
instead of an open, a read and a close. The per-cell hooks read the peak RSS and reset it at
every cell boundary and the sampler reads the RSS every tick; opening ``/proc/self/status``
cost 40 µs a read on the development VM against 8 µs for a ``pread`` on a kept descriptor,
and every system call gives up the GIL. ``ProcFile`` is one file of this process;
``KeptProcFiles`` is a bounded set of other processes' files (the children the process source
follows). Both let go of their descriptors in a forked child and when closed.

``ProcFile`` reads and writes through libc with the GIL kept (``ctypes.PyDLL``): these files are
made in memory and answer in microseconds, but a call that gives the GIL up at a cell's start
or end hands it to the kernel's other threads (the one sending the cell's messages, the
sampler's), and the main thread waited 20-60 µs to get it back, on the development VM, against
1-4 µs for the read itself (issue 43).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any


def _libc_calls() -> tuple[Any, Any] | tuple[None, None]:
    """libc's ``pread`` and ``write`` as calls that keep the GIL, or (None, None) where they
    cannot be had (then ``os``'s are used)."""
    if ctypes.sizeof(ctypes.c_long) != 8:
        return None, None  # (an offset type to get right for a 32-bit libc: not worth it)
    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        pread, write = libc.pread, libc.write
    except (OSError, AttributeError, TypeError):
        return None, None
    pread.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)
    pread.restype = ctypes.c_ssize_t
    write.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    write.restype = ctypes.c_ssize_t
    return pread, write


_PREAD, _WRITE = _libc_calls()


_BUFFER_TYPES: dict[int, Any] = {}  # size -> ctypes char array type (made once a size)


def _read_kept(fd: int, size: int) -> bytes:
    """``os.pread(fd, size, 0)`` with the GIL kept; raises OSError as it does."""
    kind = _BUFFER_TYPES.get(size)
    if kind is None:
        kind = _BUFFER_TYPES[size] = ctypes.c_char * size
    buffer = kind()  # (one per call: two threads may read; C calls only, for a cold cell edge)
    n = _PREAD(fd, buffer, size, 0)
    if n < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return buffer[:n]


def _write_kept(fd: int, data: bytes) -> None:
    """``os.write(fd, data)`` with the GIL kept; raises OSError as it does."""
    if _WRITE(fd, data, len(data)) < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _os_read(fd: int, size: int) -> bytes:
    return os.pread(fd, size, 0)


def _os_write(fd: int, data: bytes) -> None:
    os.write(fd, data)


_read: Callable[[int, int], bytes] = _read_kept if _PREAD is not None else _os_read
_write: Callable[[int, bytes], None] = _write_kept if _WRITE is not None else _os_write


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
        return _read(fd if fd is not None else self._fd(), size)

    def write(self, data: bytes) -> None:
        """Write ``data`` (for a control file such as ``clear_refs``); raises OSError."""
        _write(self._fd(), data)

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
