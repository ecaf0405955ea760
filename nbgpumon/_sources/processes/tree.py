"""This kernel's process tree, followed live: its children, theirs (a script behind ``sh -c``,
a launcher's workers), across ``exec`` (the PID stays), and those left behind by a parent
that exited (reparented, still known by PID and start).

Each scan reads two small ``/proc`` files a descendant (its ``stat`` and its main thread's
``children``) and the kernel's threads' ``children``; every eighth scan also lists each
descendant's threads, for a child started from a thread other than its main one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..proc_file import read_proc
from .proc_reads import ProcStat, read_stat

MAX_DESCENDANTS = 256  # followed at once: a fork bomb must not make a tick unbounded
THREADS_EVERY = 8  # scans between two listings of every descendant's threads


@dataclass(frozen=True, slots=True)
class Seen:
    """A descendant as the last scan saw it: alive, or exited and not yet waited for."""

    stat: ProcStat
    depth: int  # 1: the kernel's own child


class ProcessTree:
    """The live descendants of ``root`` (this process by default); never raises."""

    def __init__(self, root: int | None = None) -> None:
        self.root = os.getpid() if root is None else root
        self.known: dict[int, Seen] = {}
        self.scans = 0
        self.has_children_files = os.path.exists(f"/proc/{self.root}/task/{self.root}/children")

    def scan(self) -> dict[int, Seen]:
        """Every descendant alive now (zombies included: their exit code is in ``stat``)."""
        self.scans += 1
        all_threads = self.scans % THREADS_EVERY == 1
        found: dict[int, Seen] = {}
        depth = {pid: 1 for pid in self._children(self.root, True)}
        for pid, seen in self.known.items():  # a reparented one is still ours
            depth.setdefault(pid, seen.depth)
        queue = list(depth)
        while queue and len(found) < MAX_DESCENDANTS:
            pid = queue.pop()
            if pid in found:
                continue
            stat = read_stat(pid)
            if stat is None:
                continue  # gone between two reads
            before = self.known.get(pid)
            reused = before is not None and before.stat.start_ticks != stat.start_ticks
            if reused and stat.parent != self.root and stat.parent not in found:
                continue  # the PID was reused by a stranger
            found[pid] = Seen(stat, depth[pid])
            if stat.state in ("Z", "X"):
                continue
            for child in self._children(pid, all_threads):
                if child not in depth:
                    depth[child] = depth[pid] + 1
                    queue.append(child)
        self.known = found
        return found

    def _children(self, pid: int, all_threads: bool) -> list[int]:
        if not self.has_children_files:
            return _children_by_parent(pid)
        tids = [str(pid)]
        if all_threads:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                return []
        out: list[int] = []
        for tid in tids:
            raw = read_proc(f"/proc/{pid}/task/{tid}/children", 65536)
            if raw:
                out += [int(p) for p in raw.split()]
        return out


def _children_by_parent(pid: int) -> list[int]:
    """Where the kernel lacks ``children`` files: every process whose parent is ``pid``
    (a scan of ``/proc``: costlier, only on such kernels)."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None and stat.parent == pid:
                out.append(stat.pid)
    return out
