"""Host memory: this kernel's resident set and the machine's memory."""

from __future__ import annotations

import os
from typing import Any

from .._foundation.metrics import columns_for, metrics_of
from .base import REPEAT, SLOW
from .proc_file import ProcFile, read_proc

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATUS_BYTES = 8192  # /proc/self/status is about 1.5 KB; VmHWM is in its first half


class HostSource:
    """Reads host memory in bytes; missing values are ``None``, never an exception."""

    name = "host"
    metrics = metrics_of("host")

    def __init__(self) -> None:
        self._process: Any = None  # psutil's, where /proc cannot be read (imported then)
        self._system: tuple[int | None, int | None] = (None, None)  # carried between slow reads
        self._last: list[float | None] | None = None  # carried on REPEAT ticks
        self._statm = ProcFile("statm")
        self._status_file = ProcFile("status")  # VmHWM: the peak RSS
        self._clear_refs = ProcFile("clear_refs", os.O_WRONLY)
        self.status = "ok"
        # Linux resets the peak-RSS mark (VmHWM) on writing "5" to clear_refs: exact per-cell peaks.
        self.can_reset_peak = _writable("/proc/self/clear_refs") and _readable("/proc/self/status")

    def columns(self) -> list[str]:
        return columns_for(self.metrics, [])

    def read(self, due: frozenset[str]) -> list[float | None]:
        """RSS every tick (carried with ``REPEAT`` due); the machine's used and available
        memory when ``SLOW`` is due."""
        last = self._last
        if last is not None and REPEAT in due:
            return last
        if SLOW in due:
            self._system = self.system()
        fd = self._statm.kept
        try:  # most ticks: the kept descriptor read here, not through rss()
            rss = int(os.pread(fd, 128, 0).split()[1]) * _PAGE if fd is not None else self.rss()
        except (OSError, ValueError, IndexError):
            rss = self.rss()
        self._last = [rss, *self._system]
        return self._last

    def rss(self) -> int | None:
        """This process's resident set size, in bytes."""
        try:
            return int(self._statm.read(128).split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            pass
        try:
            if self._process is None:
                import psutil  # not on the load's path: Linux reads /proc

                self._process = psutil.Process()
            return int(self._process.memory_info().rss)
        except Exception as exc:
            self.status = f"cannot read RSS: {exc}"
            return None

    def close(self) -> None:
        """Close the descriptors kept open; a later read opens them again."""
        for file in (self._statm, self._status_file, self._clear_refs):
            file.close()

    def system(self) -> tuple[int | None, int | None]:
        """Machine memory (used, available), in bytes; slower, for the slow cadence. Used is
        total less available, as ``psutil.virtual_memory()`` gives them."""
        meminfo = _meminfo()
        if meminfo is not None:
            total, available = meminfo
            return total - available, available
        try:
            import psutil  # where /proc/meminfo cannot be read (macOS)

            vm = psutil.virtual_memory()
            return int(vm.total - vm.available), int(vm.available)
        except Exception as exc:
            self.status = f"cannot read system memory: {exc}"
            return None, None

    def peak_rss(self) -> int | None:
        """High-water RSS since the last :meth:`reset_peak` (or process start), in bytes."""
        return self.rss_and_peak()[1]

    def rss_and_peak(self) -> tuple[int | None, int | None]:
        """The resident set and its high-water mark, in bytes, from one read (a cell's end);
        the resident set as :meth:`rss` reads it where the mark cannot be read."""
        try:
            text = self._status_file.read(_STATUS_BYTES)
            return _kib(text, b"VmRSS:"), _kib(text, b"VmHWM:")
        except (OSError, ValueError, IndexError):
            return self.rss(), None

    def reset_peak(self) -> bool:
        """Restart the high-water RSS mark at the current RSS; False where the OS can't."""
        if not self.can_reset_peak:
            return False
        try:
            self._clear_refs.write(b"5")
            return True
        except OSError:
            self.can_reset_peak = False
            return False


def _kib(status: bytes, field: bytes) -> int:
    """The figure of ``field`` in /proc/self/status (kB), in bytes; raises where it lacks it."""
    at = status.index(field) + len(field)
    return int(status[at : status.index(b"\n", at)].split()[0]) * 1024


def _meminfo() -> tuple[int, int] | None:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo; None where it cannot be read
    (not Linux, or a kernel before 3.14, which has no MemAvailable)."""
    text = read_proc("/proc/meminfo")
    if text is None:
        return None
    found: dict[bytes, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"MemTotal", b"MemAvailable"):
            try:
                found[key] = int(rest.split()[0]) * 1024
            except (ValueError, IndexError):
                return None
    if len(found) < 2:
        return None
    return found[b"MemTotal"], found[b"MemAvailable"]


def _writable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.W_OK)


def _readable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.R_OK)
