"""Host memory: this kernel's resident set and the machine's memory."""

from __future__ import annotations

import contextlib
import os

import psutil

from .._foundation.metrics import columns_for, metrics_of
from .base import SLOW

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class HostSource:
    """Reads host memory in bytes; missing values are ``None``, never an exception."""

    name = "host"
    metrics = metrics_of("host")

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._system: tuple[int | None, int | None] = (None, None)  # carried between slow reads
        self._statm: tuple[int, int] | None = None  # (pid, fd): reopened after a fork
        self.status = "ok"
        # Linux resets the peak-RSS mark (VmHWM) on writing "5" to clear_refs: exact per-cell peaks.
        self.can_reset_peak = _writable("/proc/self/clear_refs") and _readable("/proc/self/status")

    def columns(self) -> list[str]:
        return columns_for(self.metrics, [])

    def read(self, due: frozenset[str]) -> list[float | None]:
        """RSS every tick; the machine's used and available memory when ``SLOW`` is due."""
        if SLOW in due:
            self._system = self.system()
        return [self.rss(), *self._system]

    def rss(self) -> int | None:
        """This process's resident set size, in bytes."""
        try:
            return int(self._read_statm().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            pass
        try:
            return int(self._process.memory_info().rss)
        except Exception as exc:
            self.status = f"cannot read RSS: {exc}"
            return None

    def _read_statm(self) -> bytes:
        # One pread on a descriptor kept open: each system call gives up the GIL, and a
        # busy main thread makes the sampler wait for it back every time.
        pid = os.getpid()
        if self._statm is None or self._statm[0] != pid:
            if self._statm is not None:  # a forked child's inherited copy of the parent's
                _close_quietly(self._statm[1])
            self._statm = (pid, os.open("/proc/self/statm", os.O_RDONLY))
        return os.pread(self._statm[1], 128, 0)

    def close(self) -> None:
        """Close the descriptor :meth:`rss` keeps open; a later read opens it again."""
        statm, self._statm = self._statm, None
        if statm is not None and statm[0] == os.getpid():
            _close_quietly(statm[1])

    def system(self) -> tuple[int | None, int | None]:
        """Machine memory (used, available), in bytes; slower, for the slow cadence."""
        try:
            vm = psutil.virtual_memory()
            return int(vm.total - vm.available), int(vm.available)
        except Exception as exc:
            self.status = f"cannot read system memory: {exc}"
            return None, None

    def peak_rss(self) -> int | None:
        """High-water RSS since the last :meth:`reset_peak` (or process start), in bytes."""
        try:
            with open("/proc/self/status", "rb") as f:
                for line in f:
                    if line.startswith(b"VmHWM:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def reset_peak(self) -> bool:
        """Restart the high-water RSS mark at the current RSS; False where the OS can't."""
        if not self.can_reset_peak:
            return False
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            self.can_reset_peak = False
            return False


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _writable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.W_OK)


def _readable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.R_OK)
