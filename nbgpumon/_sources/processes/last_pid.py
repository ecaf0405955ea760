"""The last PID the kernel handed out in this PID namespace (``/proc/sys/kernel/ns_last_pid``). Read
after each cell's end for the next cell's start (or at that start, where it is stale), it orders a
child against cells exactly, where its start time, read to a 10 ms clock tick, cannot (a ``Popen``
first thing in a cell run right after another). One ``pread`` of a kept descriptor; None where the
file is missing (an old or locked-down kernel: the start time decides then)."""

from __future__ import annotations

from ..proc_file import ProcFile

# A PID this far below the last one is taken to have come after the numbers wrapped around
# (pid_max is 32768 on older systems, 4194304 on newer).
WRAP = 16384

_LAST_PID = ProcFile("../sys/kernel/ns_last_pid")  # (/proc/self/../sys: /proc/sys)


def last_pid() -> int | None:
    try:
        return int(_LAST_PID.read(32))
    except (OSError, ValueError):
        return None


def born_after(pid: int, last: int) -> bool:
    """Whether process ``pid`` got its number after ``last`` was the last one handed out."""
    return pid > last or last - pid > WRAP
