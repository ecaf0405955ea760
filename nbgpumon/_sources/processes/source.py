"""The process source follows this kernel's process tree at the process cadence. It reads each
child's GPU figures from the device source's process list and splits each GPU's memory into this
kernel's, its children's and everyone else's (timeline columns).

It keeps its own clock (``interval``, 0.2 s by default: two ticks at the default 0.1 s) rather
than a cadence of the sampler's, so that its scans cost a scan, not a read of every source:
every tick asks it, and most ticks it answers its last values. While a child is new, the GPUs'
process lists are read at every scan (a child that lives a second is seen) and the per-process
utilization every 0.8 s; once every child is settled, the lists at every tenth scan (2 s at the
defaults, as often as the slow cadence reads them without children), the utilization every 8 s,
and seven scans in eight are light (the kernel's children as before: nothing to follow).
Everything runs on the sampler's thread; the main thread reads :meth:`ProcessSource.children` and
:attr:`ProcessSource.processes`, copies made from plain data. ``cpu_ns``/``scans``: what its
scans took of the thread's CPU (benchmarks).
"""

from __future__ import annotations

import collections
import os
import time
from typing import TYPE_CHECKING

from ..base import SLOW
from ..devices.protocol import GpuProcess, ProcessRole, ProcessUtil, role
from .children import ChildRun, ChildUsage
from .jupyter_kernels import JupyterKernels, KernelIdentity
from .metrics import LABEL, METRICS, SOURCE
from .on_gpu import ProcessOnGpu
from .proc_reads import (
    ProcStat,
    argv_of,
    boot_time,
    comm_of,
    environ_of,
    owner_of,
    program_name,
    read_stat,
    returncode,
    short_command,
    started_at,
)
from .tree import DESCENDANTS_EVERY, ProcessTree, Seen

if TYPE_CHECKING:
    from ..devices.protocol import DeviceSource

ENDED_KEPT = 256  # ended children kept for the cells that started them (bounded)
# Seconds between two reads of the per-process utilization (the driver's sample of each
# process's last period; one read cost ~1.5 ms of CPU on an H200): while a child is new, and
# once every child is settled.
UTIL_EVERY = 0.8
UTIL_SETTLED_EVERY = 8.0
# The GPUs' lists are read at every scan while a child is new (its peak comes early, and a
# short one must be seen); once every child is older than this, at every LIST_EVERY-th scan
# (2 s at the defaults, as often as the slow cadence lists them without children; each
# child's peak then says it was sampled that much less often).
NEW_CHILD = 5.0
LIST_EVERY = 10
# With every child settled, scans between two full ones (each child's stat read, and its
# children: a multiple of the tree's DESCENDANTS_EVERY); the others are light: a child that
# comes, or one the kernel waits for, is seen at the next all the same.
FULL_EVERY = 2 * DESCENDANTS_EVERY
YOUNG = 3.0  # seconds a child's command is read at every scan (an exec soon after start)
COMMAND_EVERY = 4  # full scans between two reads of an older child's command
NAMES_KEPT = 512  # other processes' identities cached (by PID and start)
HIDDEN = "unknown (PID hidden by a PID namespace)"
OTHER_USER = "another user's process"


class ProcessSource:
    """This kernel's children and the GPUs' process split; never raises."""

    name = SOURCE
    label = LABEL
    metrics = METRICS

    def __init__(
        self,
        devices: DeviceSource,
        interval: float = 0.2,
        root: int | None = None,
        kernels: JupyterKernels | None = None,
    ) -> None:
        self.devices = devices
        found = role(devices, ProcessRole)  # asked once: the list's reads go to it
        self.lists_processes = found is not None
        self._lister: ProcessRole = found if found is not None else _NoProcessList()
        if found is None:
            self.metrics = ()  # no list to split each GPU's memory by: no columns, no scans
        self.interval = interval  # the process cadence's (Session keeps it in step)
        self.tree = ProcessTree(root)
        self.root = self.tree.root
        self.kernels = kernels if kernels is not None else JupyterKernels()
        self.processes: list[ProcessOnGpu] = []  # the GPUs' processes at the last list read
        self.runs: dict[int, ChildRun] = {}  # descendants followed now, by PID
        self.ended: collections.deque[ChildRun] = collections.deque(maxlen=ENDED_KEPT)
        self.changes = 0  # moves when a child on a GPU starts, ends or grows (views settle)
        self.error = ""
        self._uid = os.getuid()
        self._boot = boot_time()
        self._values: list[float | None] = []
        self._lists = 0  # process lists read
        self._skipped = 0  # scans since the last list read
        self._listed_at = 0.0  # monotonic time of the last list read
        self._util_at = 0.0  # ... and of the per-process utilization
        self._follows = 0  # full scans followed
        self._youngest = 0.0  # the latest start of a child followed (unix time)
        self._next = 0.0  # monotonic time the next scan is due
        self.scans = 0
        self.cpu_ns = 0  # the sampler thread's CPU time in the scans
        # other processes' owner, command line and environment, by PID and start
        self._names: dict[tuple[int, int], tuple[str, bool, list[str], dict[str, str]]] = {}
        self._own_name = ""  # this kernel's program, read at its first listing
        self._others: dict[int, ProcStat | None] = {}  # the last list's other processes

    @property
    def status(self) -> str:
        return self.error or "ok"

    def columns(self) -> list[str]:
        return [m.column(d.index) for d in self.devices.devices for m in self.metrics]

    def read(self, due: frozenset[str]) -> list[float | None]:
        """Its last values; a scan first when one is due (or the slow cadence is). Without a
        GPU there is nothing to charge a child with: nothing is scanned."""
        if not self.devices.devices:
            return self._values
        mono = time.monotonic()
        if mono < self._next and (SLOW not in due or self.runs):
            return self._values  # most ticks (the sampler copies the values it is given)
        self._next = mono + self.interval
        cpu_from = time.thread_time_ns()
        width = len(self.devices.devices) * len(self.metrics)
        if len(self._values) != width:
            self._values = [None] * width
        try:
            self._read(SLOW in due)
            self.error = ""
        except Exception as exc:  # contained: /proc or the driver said something odd
            self.error = f"process list: {type(exc).__name__}: {exc}"
        self.scans += 1
        self.cpu_ns += time.thread_time_ns() - cpu_from
        return self._values

    # -- what the main thread reads -------------------------------------------------------
    def children(self, since: float | None = None) -> list[ChildUsage]:
        """Every child seen on a GPU (that started at ``since`` or later): those followed now
        and the latest that ended."""
        runs = [*list(self.ended), *list(self.runs.values())]
        if since is not None:
            runs = [run for run in runs if run.started >= since]
        return [run.usage(self.interval) for run in runs if run.on_gpu]

    @property
    def has_children(self) -> bool:
        return bool(self.runs)

    # -- the sampler's thread -------------------------------------------------------------
    def _read(self, slow: bool) -> None:
        if not self.lists_processes:
            return  # (no child is ever seen on a GPU: nothing to follow)
        now = time.time()
        had_children = bool(self.runs)
        settled = bool(self.runs) and now - self._youngest >= NEW_CHILD
        # children that all live long (workers, a job's ranks): most scans look only for new
        # ones (an exit is seen within FULL_EVERY scans)
        light = settled and self.tree.scans % FULL_EVERY != 0
        before = self.tree.known
        seen = self.tree.scan(light)
        came = seen is not before and self._follow(seen, now)  # (a light scan, nothing new)
        if not self.runs and not had_children and not slow:
            return  # (one more list once the last child ended: it is gone from the list)
        self._skipped += 1
        if settled and not (came or self._skipped >= LIST_EVERY):
            return
        self._skipped = 0
        listed = self._lister.read_processes() if self.devices.available else []
        mono = time.monotonic()
        gap, self._listed_at = mono - self._listed_at, mono
        self._lists += 1
        self._account(listed, gap)
        if self.runs and mono - self._util_at >= (UTIL_SETTLED_EVERY if settled else UTIL_EVERY):
            self._util_at = mono
            for sample in self._lister.read_process_utilization():
                run = self.runs.get(sample.pid)
                if run is not None:
                    total, n = run.util.get(sample.index, (0.0, 0))
                    run.util[sample.index] = (total + sample.sm, n + 1)
        self.processes = [self._describe(p) for p in listed]

    def _account(self, listed: list[GpuProcess], gap: float = 0.0) -> None:
        """Each child's peak from the list (``gap`` s after the last), the columns' split of
        each GPU's memory."""
        split = {d.index: [0, 0, 0] for d in self.devices.devices}
        others: dict[int, ProcStat | None] = {}
        for p in listed:
            used = p.used_memory or 0
            parts = split.get(p.index)
            run = self.runs.get(p.pid) if p.pid is not None else None
            if run is None and p.pid is not None and not p.is_this_kernel:
                stat = others[p.pid] if p.pid in others else read_stat(p.pid)
                seen = self.tree.adopt(p.pid, stat)  # a grandchild not reached yet
                if seen is not None and not seen.stat.exited:  # (a list late to drop one)
                    run = self.runs[p.pid] = self._new_run(seen)
                else:
                    others[p.pid] = stat  # (who it is: _identity)
            if parts is not None:
                parts[0 if p.is_this_kernel else 1 if run is not None else 2] += used
            if run is None:
                continue
            if not run.on_gpu:
                run.on_gpu = True
                self.changes += 1
            elif gap > run.interval:
                run.interval = gap  # (sampled no more often than this while it held memory)
            if used > run.peaks.get(p.index, -1):
                run.peaks[p.index] = used
                self.changes += 1
            exact = self._lister.accounted_peak(p.index, p.pid)  # type: ignore[arg-type]
            if exact is not None:
                run.exact[p.index] = exact
        self._values = [float(v) for d in self.devices.devices for v in split[d.index]]
        self._others = others

    def _follow(self, seen: dict[int, Seen], now: float) -> bool:
        """The runs kept true to the scan; True when a new descendant came."""
        runs, came = self.runs, False
        self._follows += 1
        commands = self._follows % COMMAND_EVERY == 0
        for pid, entry in seen.items():
            stat = entry.stat
            run = runs.get(pid)
            if run is not None and run.start_ticks != stat.start_ticks:
                self._end(run)  # the PID was reused: another process
                run = None
            if stat.exited:
                # it has exited (its memory is freed); its parent may never wait for it: an
                # orphan under a PID 1 that reaps nothing stays a zombie for good
                if run is not None:
                    if stat.exit_code is not None:
                        run.exit_code = returncode(stat.exit_code)
                    self._end(run)
                continue  # (one first seen dead never held memory the lists saw)
            if run is None:
                runs[pid] = self._new_run(entry)
                came = True
                continue
            run.last_seen = now
            if commands or now - run.started < YOUNG:
                command = short_command(argv_of(pid), run.command)
                if command != run.command:  # an exec: what it runs now
                    run.command = command
                    _read_rank(run, pid)
        for pid in [pid for pid in runs if pid not in seen]:
            self._end(runs[pid])
        return came

    def _new_run(self, entry: Seen) -> ChildRun:
        stat = entry.stat
        pid = stat.pid
        run = ChildRun(
            pid, stat.start_ticks, short_command(argv_of(pid), comm_of(pid)),
            started_at(stat, self._boot), stat.parent, entry.depth, last_seen=time.time(),
        )  # fmt: skip
        parent = self.runs.get(stat.parent)
        if parent is not None:
            run.launcher = parent.command
        _read_rank(run, pid)
        self._youngest = max(self._youngest, run.started)
        return run

    def _end(self, run: ChildRun) -> None:
        self.runs.pop(run.pid, None)
        run.ended = run.last_seen or time.time()
        if run.on_gpu:
            for index in list(run.peaks):
                exact = self._lister.accounted_peak(index, run.pid)
                if exact is not None:  # the driver keeps an exited process's accounting
                    run.exact[index] = exact
            self.ended.append(run)
            self.changes += 1

    def _describe(self, p: GpuProcess) -> ProcessOnGpu:
        """``p`` with who it is."""
        if p.pid is None:
            return ProcessOnGpu(p, HIDDEN)
        if p.is_this_kernel:
            if not self._own_name:
                self._own_name = program_name(p.pid)
            return ProcessOnGpu(p, self._own_name)
        run = self.runs.get(p.pid)
        if run is not None:
            return ProcessOnGpu(p, run.command, run.started, run.rank, run.job)
        name, other_user, kernel = self._identity(p.pid, self._others.get(p.pid))
        return ProcessOnGpu(p, name, other_user=other_user, kernel=kernel)

    def _identity(self, pid: int, stat: ProcStat | None) -> tuple[str, bool, KernelIdentity | None]:
        """Who another process is (``stat``: as this list's read found it): its owner, name,
        command line and environment read once per process (PID and start); a kernel's
        notebook and state asked each time (the names' cache: never waited for)."""
        key = (pid, stat.start_ticks if stat is not None else -1)
        known = self._names.get(key)
        if known is None:
            owner = owner_of(pid)
            if owner is not None and owner != self._uid:
                known = (OTHER_USER, True, [], {})  # another user's: nothing more is read
            else:
                known = (program_name(pid), False, argv_of(pid), environ_of(pid))
            if len(self._names) >= NAMES_KEPT:
                self._names.clear()
            self._names[key] = known
        name, other_user, argv, environ = known
        if other_user:
            return name, True, None
        return name, False, self.kernels.identify(pid, argv, environ)

    def close(self) -> None:
        """No more fetches of the servers' sessions, no file kept open (the session is
        closing)."""
        self.kernels.close()
        self.tree.files.close()


class _NoProcessList:
    """The process role of a device source that has none: nothing listed."""

    def read_processes(self) -> list[GpuProcess]:
        return []

    def read_process_utilization(self) -> list[ProcessUtil]:
        return []

    def accounted_peak(self, index: int, pid: int) -> int | None:
        return None


def _read_rank(run: ChildRun, pid: int) -> None:
    """A job's worker's rank and job, from its environment (torchrun, accelerate, Lightning)."""
    env = environ_of(pid)
    rank = _int(env.get("RANK"))
    if rank is None:
        return
    run.rank, run.local_rank = rank, _int(env.get("LOCAL_RANK"))
    run.world_size = _int(env.get("WORLD_SIZE"))
    run_id = env.get("TORCHELASTIC_RUN_ID", "")
    master = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
    if run_id and run_id != "none":
        run.job = run_id
    else:
        run.job = master if master != ":" else str(run.parent)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
