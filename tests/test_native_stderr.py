"""What native code writes to the process's stderr (fd 2) while a short call runs: the lines
with a given start dropped, every other line written after the call (torch's profiler markers,
``_foundation/native_stderr.py``)."""

from __future__ import annotations

import os

import pytest

from nbgpumon._foundation.native_stderr import native_stderr_without


def test_lines_with_the_prefix_are_dropped_and_the_others_come_through(capfd):
    with native_stderr_without("USDT:"):
        os.write(2, b"USDT:2026-12-06 11:34:00 1:1 SyncActivityProfilerHandler.cpp:52] start\n")
        os.write(2, b"WARNING: a real problem\n")
        os.write(2, b"USDT:2026-12-06 11:34:00 1:1 SyncActivityProfilerHandler.cpp:59] stop\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "WARNING: a real problem\nafter\n"


def test_an_error_in_the_block_still_gives_back_its_lines_and_stderr(capfd):
    with pytest.raises(RuntimeError), native_stderr_without("USDT:"):
        os.write(2, b"said before the error\nUSDT: marker\n")
        raise RuntimeError("another profiler is running")
    os.write(2, b"stderr is back\n")
    assert capfd.readouterr().err == "said before the error\nstderr is back\n"
