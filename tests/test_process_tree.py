"""The process tree and what /proc says of a process, with real processes: children that
exit between two reads, a zombie's exit code, a PID that is gone, another user's process,
and a device source that lists a process that no longer exists."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time

import pytest

from nbgpumon._sources.devices.protocol import GpuDevice, GpuProcess
from nbgpumon._sources.proc_file import read_proc
from nbgpumon._sources.processes.proc_reads import (
    argv_of,
    environ_of,
    owner_of,
    read_stat,
    returncode,
    short_command,
)
from nbgpumon._sources.processes.source import ProcessSource
from nbgpumon._sources.processes.tree import DESCENDANTS_EVERY, ProcessTree

from waiting import until

GONE = 2**22 + 12345  # above the default pid_max's range: no such process


def test_a_pid_that_is_gone_reads_as_nothing():
    assert read_stat(GONE) is None
    assert argv_of(GONE) == [] and environ_of(GONE) == {} and owner_of(GONE) is None


def test_children_and_grandchildren_are_followed_and_let_go_when_they_exit():
    tree = ProcessTree()
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30; wait"])

    def sleeps() -> list[int]:
        # the shell's children (pytest may have others: a session's Prometheus, a server),
        # each once it has exec'd (a forked shell is its parent's copy until then)
        mine = [pid for pid, seen in tree.scan().items() if seen.stat.parent == shell.pid]
        return mine if len(mine) == 2 and all(argv_of(p)[:1] == ["sleep"] for p in mine) else []

    try:
        mine = until(sleeps, "the shell's two sleeps")
        assert tree.known[shell.pid].depth == 1
        assert [tree.known[pid].depth for pid in mine] == [2, 2]
    finally:
        shell.kill()
        shell.wait()
    # its sleeps are orphans now (reparented): still followed while they live
    until(
        lambda: all(pid in tree.scan() for pid in mine) and shell.pid not in tree.known,
        "the orphaned sleeps followed",
    )
    for pid in mine:
        os.kill(pid, 9)
    # let go once gone, or once said dead: a PID 1 that reaps nothing keeps orphans' zombies
    until(lambda: not any(p in tree.scan() for p in mine), "the sleeps let go")


def test_a_child_that_exited_ends_while_its_zombie_waits_for_its_parent():
    child = subprocess.Popen(["sh", "-c", "read line; exit 3"], stdin=subprocess.PIPE)
    source = ProcessSource(_Listing([GpuProcess(0, child.pid, 2**30, False)]))
    try:
        until(lambda: source.read(frozenset({"slow"})) and child.pid in source.runs, "the child")
        child.stdin.close()  # it exits; nothing waits for it yet
        # (pytest may have children of its own: a session's Prometheus, a server)
        until(lambda: source.read(frozenset({"slow"})) and child.pid not in source.runs, "its end")
        assert read_stat(child.pid).state == "Z"  # ended while still a zombie
        (usage,) = source.children()  # the one the list shows on a GPU
        assert usage.pid == child.pid and usage.exit_code == 3 and usage.ended is not None
        for _ in range(3):
            source.read(frozenset({"slow"}))
            assert child.pid not in source.runs  # its zombie makes no new run
    finally:
        child.kill()
        child.wait()


def test_a_zombie_says_its_exit_code():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(7)"])
    stat = until(lambda: (s := read_stat(child.pid)) and s.state == "Z" and s, "its zombie")
    assert returncode(stat.exit_code) == 7
    child.wait()
    killed = subprocess.Popen(["sleep", "30"])
    killed.kill()
    stat = until(lambda: (s := read_stat(killed.pid)) and s.state == "Z" and s, "its zombie")
    assert returncode(stat.exit_code) == -9
    killed.wait()


def test_a_long_command_is_cut_short():
    text = short_command(["/usr/bin/python3", "train.py", *(["--flag"] * 40)])
    assert text.startswith("python3 train.py --flag") and len(text) == 80
    assert text.endswith("…")


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to start a process as another user")
def test_another_users_process_is_said_to_be_one_and_nothing_more():
    stranger = subprocess.Popen(["sleep", "30"], user=65534)  # nobody
    kernel = subprocess.Popen(["sleep", "30"])  # the "kernel": the stranger is not its child
    try:
        devices = _Listing([GpuProcess(0, stranger.pid, 2**30, False)])
        source = ProcessSource(devices, root=kernel.pid)
        source.read(frozenset({"slow"}))
        (p,) = source.processes
        assert p.other_user and p.name == "another user's process" and p.kernel is None
    finally:
        for process in (stranger, kernel):
            process.kill()
            process.wait()


def test_a_listed_process_that_vanished_is_no_error():
    devices = _Listing([GpuProcess(0, GONE, 2**30, False)])
    source = ProcessSource(devices)
    row = source.read(frozenset({"slow"}))
    assert source.status == "ok"
    assert row == [0.0, 0.0, float(2**30)]  # this kernel, its children, the others
    (p,) = source.processes
    assert not p.is_child and not p.other_user


class _Listing:
    """A device source's process role only: one GPU and the processes it is told."""

    available = True
    label = "listing"

    def __init__(self, processes: list[GpuProcess]) -> None:
        self.devices = [GpuDevice(0, "GPU", "GPU-0", 2**34, 0)]
        self._processes = processes

    def read_processes(self) -> list[GpuProcess]:
        return list(self._processes)

    def read_process_utilization(self) -> list:
        return []

    def accounted_peak(self, index: int, pid: int) -> int | None:
        return None


def test_a_listed_grandchild_the_scans_have_not_reached_is_traced_up_its_parents():
    tree = ProcessTree()
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        sleeper = until(lambda: _first_child(shell.pid), "the shell's child")
        seen = tree.adopt(sleeper)
        assert seen is not None and seen.depth == 2 and tree.known[shell.pid].depth == 1
        assert tree.adopt(os.getppid()) is None  # pytest's parent: no descendant
    finally:
        shell.kill()
        shell.wait()


def _first_child(pid: int) -> int | None:
    raw = read_proc(f"/proc/{pid}/task/{pid}/children") or b""
    return int(raw.split()[0]) if raw.split() else None


def test_a_pid_is_ordered_against_the_last_one_across_a_wrap():
    from nbgpumon._sources.processes.last_pid import born_after, last_pid

    before = last_pid()
    assert before is not None  # (Linux: /proc/sys/kernel/ns_last_pid)
    child = subprocess.Popen(["true"])
    child.wait()
    assert born_after(child.pid, before)
    assert not born_after(before - 5, before)
    assert born_after(300, 32000)  # the numbers wrapped around: 300 came after 32000


def test_a_child_started_from_another_thread_is_found_by_the_scans():
    # (the kernel's other threads are read only when a process was made since they last were;
    # the thread stays alive: a thread's children move to another when it ends)
    tree = ProcessTree()
    started: list[subprocess.Popen] = []
    done = threading.Event()

    def start_and_stay() -> None:
        started.append(subprocess.Popen(["sleep", "30"]))
        done.wait(60)

    worker = threading.Thread(target=start_and_stay)
    worker.start()
    try:
        child = until(lambda: started and started[0], "the thread's child started")
        assert child.pid not in _children_file(threading.main_thread().native_id)
        until(lambda: child.pid in tree.scan(), "the thread's child in a scan")
        assert tree.known[child.pid].depth == 1
        # nothing made since: later scans still follow it, by PID
        assert all(child.pid in tree.scan() for _ in range(2 * DESCENDANTS_EVERY))
    finally:
        done.set()
        worker.join()
        for process in started:
            process.kill()
            process.wait()


def _children_file(tid: int) -> list[int]:
    raw = read_proc(f"/proc/{os.getpid()}/task/{tid}/children") or b""
    return [int(p) for p in raw.split()]


def test_a_light_scan_answers_the_last_until_a_child_comes_or_is_waited_for():
    tree = ProcessTree()
    first = subprocess.Popen(["sleep", "30"])
    second = None
    try:
        until(lambda: first.pid in tree.scan(), "the child")
        # nothing came or went since the last scan: the same answer, nothing read but the
        # kernel's children (pytest's own may come and go: asked until they keep still)
        until(lambda: tree.known is tree.scan(light=True), "a light scan's answer")
        second = subprocess.Popen(["sleep", "30"])
        assert second.pid in tree.scan(light=True)  # a new child: a full scan at once
        first.kill()
        first.wait()  # waited for: gone from the kernel's children
        assert first.pid not in tree.scan(light=True) and second.pid in tree.known
    finally:
        for child in (first, second):
            if child is not None:
                child.kill()
                child.wait()


def test_settled_children_have_their_utilization_read_seldom(monkeypatch):
    from nbgpumon._sources.processes import source as source_module

    child = subprocess.Popen(["sleep", "30"])
    listing = _Listing([GpuProcess(0, child.pid, 2**30, False)])
    asked: list[float] = []
    listing.read_process_utilization = lambda: asked.append(time.monotonic()) or []
    source = ProcessSource(listing, interval=0.0)
    try:
        until(lambda: source.read(frozenset()) and child.pid in source.runs, "the child")
        monkeypatch.setattr(source_module, "NEW_CHILD", 0.0)  # every child settled now
        asked.clear()
        began = time.monotonic()
        while time.monotonic() - began < 1.0:
            source.read(frozenset())
        assert source.scans > 4 * source_module.LIST_EVERY
        assert len(asked) <= 1  # (one read at most in a second: every UTIL_SETTLED_EVERY s)
        monkeypatch.setattr(source_module, "NEW_CHILD", 3600.0)  # a new child again
        asked.clear()

        def three_reads() -> bool:
            source.read(frozenset())
            return len(asked) >= 3

        until(three_reads, "three utilization reads while the child is new", every=0.0)
        # every UTIL_EVERY s (each time taken just after the source's own: a little slack)
        gaps = [later - earlier for earlier, later in itertools.pairwise(asked)]
        assert all(gap >= 0.9 * source_module.UTIL_EVERY for gap in gaps), gaps
    finally:
        child.kill()
        child.wait()
