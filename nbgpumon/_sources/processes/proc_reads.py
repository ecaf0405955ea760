"""What ``/proc`` says of one process: its parent, state, start, exit code, command, owner and
a few environment variables. Every read may find the process gone or the file unreadable (a
PID that vanished between two reads, another user's ``environ``): the answer is then None or
empty, never an error."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..._foundation.clipping import clipped
from ..proc_file import read_proc

try:
    _TICKS = os.sysconf("SC_CLK_TCK")  # stat's start time is in these (100 a second on Linux)
except (AttributeError, ValueError, OSError):
    _TICKS = 100
COMMAND_LIMIT = 80  # characters of a child's command kept: enough to tell two apart
# the variables read from a process's environment: a job's rank and who started a kernel
ENVIRON_KEYS = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR", "MASTER_PORT", "JPY_SESSION_NAME",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` nbgpumon uses."""

    pid: int
    parent: int
    state: str  # "R", "S", "Z" (exited, not yet waited for), ...
    start_ticks: int  # clock ticks after boot: with the PID, who this process is
    exit_code: int | None  # a zombie's wait status (Linux 3.5+), else None

    @property
    def exited(self) -> bool:
        """A zombie (its parent has not waited for it) or on its way out: its memory is freed."""
        return self.state in ("Z", "X")


def read_stat(pid: int, read: Callable[[str, int], bytes | None] = read_proc) -> ProcStat | None:
    """``/proc/PID/stat`` parsed (read by ``read``: a kept file's); None when the process is
    gone or the file unreadable."""
    raw = read(f"/proc/{pid}/stat", 1024)
    if not raw:
        return None
    # the command (field 2) is in parentheses and may hold spaces and ")": split after the last
    close = raw.rfind(b")")
    fields = raw[close + 2 :].split()
    try:
        state = fields[0].decode()
        parent, start = int(fields[1]), int(fields[19])
        code = int(fields[49]) if state in ("Z", "X") and len(fields) > 49 else None
    except (IndexError, ValueError, UnicodeDecodeError):
        return None
    return ProcStat(pid, parent, state, start, code)


def boot_time() -> float:
    """This machine's boot, in unix seconds, as precisely as the clocks give it."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    if clock is not None:
        return time.time() - time.clock_gettime(clock)
    raw = read_proc("/proc/uptime", 64)
    try:
        return time.time() - float((raw or b"").split()[0])
    except (IndexError, ValueError):
        return 0.0


def started_at(stat: ProcStat, boot: float) -> float:
    """When the process started, unix seconds (to a clock tick, 10 ms)."""
    return boot + stat.start_ticks / _TICKS


def argv_of(pid: int) -> list[str]:
    """Its command line as a list; [] when gone or unreadable (a kernel thread has none)."""
    raw = read_proc(f"/proc/{pid}/cmdline", 8192)
    if not raw:
        return []
    return [part.decode(errors="replace") for part in raw.rstrip(b"\0").split(b"\0")]


def short_command(argv: list[str], fallback: str = "") -> str:
    """A process's short command, ``python train.py --lr 3e-4``, from its argv: the program's base
    name, then its arguments, cut to :data:`COMMAND_LIMIT` characters."""
    if not argv:
        return fallback
    words = [os.path.basename(argv[0]), *argv[1:]]
    return clipped(" ".join(words), COMMAND_LIMIT)


def program_name(pid: int) -> str:
    """Its program's name as ``ps`` and psutil give it: ``comm``, which the kernel cuts to 15
    characters, completed from the command line's program where that starts the same way."""
    comm = comm_of(pid)
    if not comm:
        return _name_elsewhere(pid)
    if len(comm) >= 15:
        program = os.path.basename(next(iter(argv_of(pid)), ""))
        if program.startswith(comm):
            return program
    return comm


def _name_elsewhere(pid: int) -> str:
    try:
        import psutil  # where /proc cannot be read (not Linux)

        return psutil.Process(pid).name()
    except Exception:
        return "unknown (not visible from this process)"


def comm_of(pid: int) -> str:
    raw = read_proc(f"/proc/{pid}/comm", 64)
    return raw.decode(errors="replace").strip() if raw else ""


def environ_of(pid: int, keys: tuple[str, ...] = ENVIRON_KEYS) -> dict[str, str]:
    """Those of ``keys`` set in its environment; {} where it cannot be read (another user's
    process) or is gone."""
    raw = read_proc(f"/proc/{pid}/environ", 1 << 20)
    if not raw:
        return {}
    wanted = {key.encode() + b"=": key for key in keys}
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        head = entry[: entry.find(b"=") + 1]
        key = wanted.get(head)
        if key is not None:
            found[key] = entry[len(head) :].decode(errors="replace")
    return found


def owner_of(pid: int) -> int | None:
    """Its real user id; None when gone or unreadable."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def returncode(wait_status: int) -> int:
    """A wait status as :class:`subprocess.Popen` says it: the exit code, or minus the
    signal that killed it."""
    signal = wait_status & 0x7F
    return -signal if signal else (wait_status >> 8) & 0xFF


def has_exited(pid: int, own_child: bool) -> tuple[bool, int | None]:
    """Whether ``pid`` has exited, and its code where that can be told, from two system calls that
    never wait (no ``/proc`` read). A child of this process is asked without being reaped
    (``WNOWAIT``: its ``Popen.wait()`` still gets it), any other is signalled with 0."""
    if own_child and hasattr(os, "waitid"):
        try:
            found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            found = None  # reaped already (or not ours): the signal says
        except OSError:
            return False, None
        else:
            if found is None:
                return False, None  # running
            killed = found.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
            return True, -found.si_status if killed else found.si_status
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True, None
    except OSError:
        return False, None  # (another user's: it exists)
    return False, None
