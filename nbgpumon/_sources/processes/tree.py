"""This kernel's process tree, followed live. The tree holds the kernel's children, theirs (a script
behind ``sh -c``, a launcher's workers), across ``exec`` (the PID stays), and those left behind by a
parent that exited (reparented, still known by PID and start). A zombie is reported once its parent
is outside the tree, then let go: a container's PID 1 may never wait for an orphan.

Each scan reads the kernel's main thread's ``children`` (where cells start processes) and each
descendant's ``stat`` (is it alive, has it exited); every fourth scan also the kernel's other
threads' ``children`` and each descendant's main thread's. A light scan (the caller's choice,
for long-lived children) reads the main thread's ``children`` alone and, where it says what it
said at the last full scan (no child came, none was waited for), answers the last scan's. A
process a GPU lists that the scans have not reached (one a child started from another thread)
is traced up its parents (:meth:`ProcessTree.adopt`), so it is charged from its first listing.
The main threads' files are kept open (``KeptProcFiles``: a read is one ``pread``); the
kernel's other threads' are opened at each read, as threads come and go (each load of nbgpumon
starts its own), and read only when the last PID handed out moved since they were last read (a
torch kernel has dozens of threads).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..proc_file import KeptProcFiles, read_proc
from .last_pid import last_pid
from .proc_reads import ProcStat, read_stat

MAX_DESCENDANTS = 256  # followed at once: a fork bomb must not make a tick unbounded
DESCENDANTS_EVERY = 4  # scans between two reads of the descendants' (and kernel threads') children
MAX_DEPTH = 16  # parents followed up from a listed process before it is taken for a stranger
STRANGERS_KEPT = 512  # processes known not to be descendants (by PID and start)


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
        self._strangers: set[tuple[int, int]] = set()
        self.files = KeptProcFiles()  # the stat and children files read at every scan
        self.has_children_files = os.path.exists(f"/proc/{self.root}/task/{self.root}/children")
        self._threads_read_at: int | None = None  # the last PID when they were last read
        self._main_children: bytes | None = None  # the main thread's children, last full scan
        self._main_path = f"/proc/{self.root}/task/{self.root}/children"

    def scan(self, light: bool = False) -> dict[int, Seen]:
        """Every descendant alive now (zombies included: their exit code is in ``stat``).
        ``light``: where the kernel's main thread has the same children as at the last full
        scan, the answer is :attr:`known` itself, as that scan left it (a caller whose
        children are all long-lived: most scans); else a full scan."""
        self.scans += 1
        if light:
            main = self.files.read(self._main_path, 65536)
            if main is not None and main == self._main_children:
                return self.known  # (the same dict: nothing to follow)
        below = self.scans % DESCENDANTS_EVERY == 1
        kids = self._children(self.root, below)
        found: dict[int, Seen] = {}
        depth = {pid: 1 for pid in kids}
        for pid, seen in self.known.items():  # a reparented one is still ours
            depth.setdefault(pid, seen.depth)
        queue = [pid for pid in depth if pid not in found]
        while queue and len(found) < MAX_DESCENDANTS:
            pid = queue.pop()
            if pid in found:
                continue
            stat = read_stat(pid, self.files.read)
            if stat is None:
                self.files.forget_process(pid)
                continue  # gone between two reads
            before = self.known.get(pid)
            reused = before is not None and before.stat.start_ticks != stat.start_ticks
            if reused and stat.parent != self.root and stat.parent not in found:
                continue  # the PID was reused by a stranger
            said_dead = stat.exited and before is not None and before.stat.exited and not reused
            if said_dead and stat.parent != self.root and stat.parent not in self.known:
                continue  # an orphan's zombie, said once: a PID 1 that reaps nothing keeps it
            found[pid] = Seen(stat, depth[pid])
            if stat.exited or not (below or pid not in self.known):
                continue  # (a new one's children are read at once: a shell's script)
            for child in self._children(pid, False):
                if child not in depth:
                    depth[child] = depth[pid] + 1
                    queue.append(child)
        for pid in self.known.keys() - found.keys():
            self.files.forget_process(pid)
        self.known = found
        return found

    def adopt(self, pid: int, stat: ProcStat | None = None) -> Seen | None:
        """``pid`` as a descendant, found by its parents, when it is one the scans have not
        reached yet; else None (remembered: a stranger is traced once). ``stat``: its own,
        where the caller has read it already."""
        seen = self.known.get(pid)
        if seen is not None:
            return seen
        chain: list[ProcStat] = []
        if stat is None:
            stat = read_stat(pid)
        for _ in range(MAX_DEPTH):
            if stat is None or (stat.pid, stat.start_ticks) in self._strangers:
                break
            chain.append(stat)
            parent = stat.parent
            if parent == self.root or parent in self.known:
                depth = 1 if parent == self.root else self.known[parent].depth + 1
                for found in reversed(chain):
                    self.known[found.pid] = Seen(found, depth)
                    depth += 1
                return self.known[pid]
            if parent <= 1:
                break
            stat = read_stat(parent)
        if len(self._strangers) >= STRANGERS_KEPT:
            self._strangers.clear()
        self._strangers.update((s.pid, s.start_ticks) for s in chain)
        return None

    def _children(self, pid: int, all_threads: bool) -> list[int]:
        if not self.has_children_files:
            return _children_by_parent(pid)
        tids = [str(pid)]
        if all_threads and pid == self.root:
            # no process (nor thread) was made anywhere since the threads were last read: none
            # of them has a new child (those known are followed by PID)
            last = last_pid()
            all_threads = last is None or last != self._threads_read_at
            self._threads_read_at = last
        if all_threads:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                return []
        out: list[int] = []
        main = str(pid)
        for tid in tids:
            path = f"/proc/{pid}/task/{tid}/children"
            raw = self.files.read(path, 65536) if tid == main else read_proc(path, 65536)
            if pid == self.root and tid == main:
                self._main_children = raw  # (what a light scan compares)
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
