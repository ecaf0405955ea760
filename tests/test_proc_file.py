"""The /proc/self files the host source keeps open: read again, and reopened in a forked child
(whose inherited descriptor would read the parent's)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from nbgpumon._sources.host import HostSource

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")


# Forks in a fresh interpreter: this test process has other threads (JAX's, after its tests),
# and a fork beside them is no part of what is tested.
FORKING_SCRIPT = """
import os
from nbgpumon._sources.proc_file import ProcFile

def pid_in(status):
    line = next(x for x in status.splitlines() if x.startswith(b"Pid:"))
    return int(line.split()[1])

status = ProcFile("status")
assert pid_in(status.read(8192)) == os.getpid()
reader, writer = os.pipe()
child = os.fork()
if child == 0:
    os.close(reader)
    os.write(writer, str(pid_in(status.read(8192))).encode())
    os._exit(0)
os.close(writer)
said = os.read(reader, 64).decode()
os.waitpid(child, 0)
print("CHILD", child, "READ", said)
print("PARENT", os.getpid(), "READ", pid_in(status.read(8192)))
status.close()
print("REOPENED", pid_in(status.read(8192)) == os.getpid())
"""


def test_a_kept_file_reads_afresh_each_time_and_in_a_child_reads_the_child():
    done = subprocess.run(
        [sys.executable, "-c", FORKING_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    child, parent, reopened = done.stdout.splitlines()
    _, child_pid, _, child_read = child.split()
    assert child_read == child_pid  # not the parent's pid: the child opened its own
    _, parent_pid, _, parent_read = parent.split()
    assert parent_read == parent_pid != child_pid  # and the parent's is still its own
    assert reopened == "REOPENED True"  # a read after close opens it again


def test_the_peak_rss_mark_resets_through_the_kept_clear_refs():
    host = HostSource()
    if not host.can_reset_peak:
        pytest.skip("this kernel can't reset the peak-RSS mark")
    for _ in range(2):  # twice: the kept descriptor's second write resets it too
        block = bytearray(64 * 2**20)
        block[::4096] = b"\1" * len(block[::4096])  # touch every page
        before = host.peak_rss()
        del block
        assert host.reset_peak()
        after = host.peak_rss()
        assert before - after > 48 * 2**20, (before, after)
    host.close()


def test_system_memory_and_process_names_from_proc_agree_with_psutil(tmp_path):
    import shutil
    import subprocess

    import psutil

    from nbgpumon._sources.host import HostSource
    from nbgpumon._sources.processes.proc_reads import program_name

    used, available = HostSource().system()
    vm = psutil.virtual_memory()
    assert abs(available - vm.available) < 256 * 2**20  # the machine's memory moves meanwhile
    assert abs(used - (vm.total - vm.available)) < 256 * 2**20
    # a name longer than the 15 characters /proc/PID/comm keeps, as psutil gives it
    program = tmp_path / "a_program_with_a_long_name"
    shutil.copy(shutil.which("sleep"), program)
    child = subprocess.Popen([str(program), "30"])
    try:
        # until the child has exec'd the program (its command line comes with it)
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).name() != program.name and time.monotonic() < deadline:
            time.sleep(0.01)
        assert program_name(child.pid) == psutil.Process(child.pid).name() == program.name
        assert program_name(os.getpid()) == psutil.Process().name()
    finally:
        child.kill()
        child.wait()
