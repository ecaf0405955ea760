"""A driver that does not answer (every NVML call takes seconds) never holds up the main thread:
cells, magics, the chart, unload, fork and load answer within a second, and the ledger marks
the figures it could not get. Real kernels, NVML faked at the library boundary (the fake's
``call_delay`` and ``init_delay``). The bounds are generous (a second against calls of 2 s and
more): a main thread that waited on the driver would miss them by seconds."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator

import pytest

from kernel_client import Kernel
from notebook_runner import fake_nvml_env

ONE_GPU = {"devices": [{"name": "Fake H200", "used": 3 * 2**30, "total": 141 * 2**30}]}
SILENT = re.compile(r"NVML has not answered for [0-9.]+ s")
SETUP = "import json, os, threading, time, nbgpumon, pynvml\nmon = nbgpumon.monitor()"
# every NVML device call takes 2 s from now on, then waits (deadline 30 s) until the
# sampler's read has kept it waiting long enough to count as not answering
STICK = (
    "pynvml._config['call_delay'] = 2.0\n"
    "_d = time.monotonic() + 30\n"
    "while not mon._session.device_ask.silent_for() and time.monotonic() < _d:\n"
    "    time.sleep(0.02)\n"
    "print('SILENT', bool(mon._session.device_ask.silent_for()))"
)
UNSTICK = (
    "pynvml._config['call_delay'] = 0\n"
    "_d = time.monotonic() + 30\n"
    "while mon._session.device_ask.silent_for() and time.monotonic() < _d:\n"
    "    time.sleep(0.02)\n"
    "print('ANSWERING', not mon._session.device_ask.silent_for())"
)
LAST = "print('LAST=' + json.dumps([(r.device_unavailable, r.devices[0].nvml_used_after) for r in nbgpumon.cells()[-1:]]))"  # noqa: E501


@pytest.fixture
def kernel(request) -> Iterator[Kernel]:
    saved = dict(os.environ)
    try:
        os.environ.update(fake_nvml_env(**{**ONE_GPU, **getattr(request, "param", {})}))
        k = Kernel()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield k
    finally:
        k.stop()


def timed(k: Kernel, code: str) -> tuple[float, list[dict]]:
    """Seconds the client waited for ``code`` to run, and its messages."""
    start = time.perf_counter()
    msgs = k.run(code, timeout=120)
    return time.perf_counter() - start, msgs


def text(msgs: list[dict]) -> str:
    """Everything the messages carry, as one string (streams, displays, widget state)."""
    return json.dumps([m["content"] for m in msgs], ensure_ascii=False)


def stdout(msgs: list[dict]) -> str:
    return "".join(
        m["content"]["text"]
        for m in msgs
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )


def after(msgs: list[dict], prefix: str):
    for line in stdout(msgs).splitlines():
        if line.startswith(prefix):
            return json.loads(line[len(prefix) :])
    raise AssertionError(f"no {prefix!r} in {stdout(msgs)!r}")


def test_with_nvml_stuck_cells_and_magics_answer_within_a_second_then_recover(kernel):
    k = kernel
    assert "watching 1 GPU " in stdout(k.run("%load_ext nbgpumon"))
    k.run(SETUP)
    assert stdout(k.run(STICK)).split() == ["SILENT", "True"]
    for code in ("pass", "pass", "x = 1"):  # each cell's start and end readings
        seconds, _ = timed(k, code)
        assert seconds < 1.0, f"{code!r} took {seconds:.2f} s with NVML stuck"
    assert after(k.run(LAST), "LAST=") == [["NVML not answering", None]]
    for magic in ("%gpumon status", "%gpumon", "%gpumon cells"):
        seconds, msgs = timed(k, magic)
        assert seconds < 1.0, f"{magic} took {seconds:.2f} s with NVML stuck"
        if magic == "%gpumon cells":
            assert "NVML not answering" in text(msgs)
        else:
            assert SILENT.search(text(msgs)), text(msgs)
    seconds, _ = timed(k, "%gpumon snapshot")
    assert seconds < 1.0, f"%gpumon snapshot took {seconds:.2f} s with NVML stuck"
    seconds, msgs = timed(k, "%config GPUMon.summary = True\npass")
    assert seconds < 1.0
    assert "GPU mem unavailable: NVML not answering" in stdout(msgs)
    k.run("%config GPUMon.summary = False")

    assert stdout(k.run(UNSTICK)).split() == ["ANSWERING", "True"]
    k.run("pass")
    assert after(k.run(LAST), "LAST=") == [["", 3 * 2**30]]  # read at its end again
    _, msgs = timed(k, "%gpumon status")
    assert not SILENT.search(text(msgs)) and "NVML: driver" in text(msgs)


def test_with_nvml_hung_the_chart_s_status_line_still_says_for_how_long(kernel):
    k = kernel
    k.run("%load_ext nbgpumon")
    k.run(SETUP)
    hang = STICK.replace("= 2.0", "= 60.0")  # a call that does not return while we look
    assert stdout(k.run(hang)).split() == ["SILENT", "True"]
    assert SILENT.search(text(k.run("%gpumon")))
    later = text(k.run("time.sleep(2.5)")) + text(k.run("time.sleep(2.5)"))
    waited = [float(n) for n in re.findall(r"NVML has not answered for ([0-9.]+) s", later)]
    assert waited and max(waited) >= 4.0, later  # sent again after cells, no tick needed


FORK = (
    "start = time.perf_counter()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    with nbgpumon.track('in child'):\n"
    "        pass\n"
    "    os._exit(0)\n"
    "forked = time.perf_counter() - start\n"
    "_d = time.monotonic() + 30\n"
    "while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < _d:\n"
    "    time.sleep(0.01)\n"
    "if not done[0]:\n"
    "    os.kill(pid, 9); os.waitpid(pid, 0)\n"
    "code = os.waitstatus_to_exitcode(done[1]) if done[0] else 'hung'\n"
    "print('FORK', forked < 1.0, code)"
)


def test_with_nvml_stuck_a_fork_neither_waits_nor_hangs_and_unload_returns_at_once(kernel):
    k = kernel
    k.run("%load_ext nbgpumon")
    k.run(SETUP)
    assert stdout(k.run(STICK)).split() == ["SILENT", "True"]
    assert stdout(k.run(FORK)).split() == ["FORK", "True", "0"]
    seconds, msgs = timed(k, "%gpumon stop")
    assert seconds < 1.0 and "sampler stopped" in stdout(msgs)
    k.run("%gpumon start")
    k.run("old = mon")
    seconds, _ = timed(k, "%unload_ext nbgpumon")
    assert seconds < 1.0, f"%unload_ext took {seconds:.2f} s with the sampler stuck"
    # from now on: none
    k.run("old_ticks, old_rows = old._session.sampler.ticks, old.timeline.cursor")
    # the driver answers again; the old thread's call returns into a stopped sampler
    reload = (
        "pynvml._config['call_delay'] = 0\n"
        "%load_ext nbgpumon\n"
        "_d = time.monotonic() + 30\n"
        "def samplers():\n"
        "    return [t for t in threading.enumerate() if t.name == 'nbgpumon-sampler']\n"
        "while len(samplers()) > 1 and time.monotonic() < _d:\n"
        "    time.sleep(0.02)\n"
        "new = nbgpumon.monitor()\n"
        "print('AFTER', len(samplers()),\n"
        "      old._session.sampler.ticks - old_ticks + old.timeline.cursor - old_rows,\n"
        "      new is not old,\n"
        "      new._session.sampler.running)"
    )
    out = stdout(k.run(reload))
    assert out.splitlines()[-1].split() == ["AFTER", "1", "0", "True", "True"], out


@pytest.mark.parametrize("kernel", [{"init_delay": 4.0}], indirect=True)
def test_load_with_nvml_stuck_at_start_is_bounded_and_says_so_then_tells_when_it_answered(
    kernel,
):
    k = kernel
    seconds, msgs = timed(k, "%load_ext nbgpumon")
    assert seconds < 3.0, f"%load_ext took {seconds:.2f} s with nvmlInit taking 4 s"
    assert "no GPU (NVML is not answering" in stdout(msgs)
    k.run(SETUP)
    seconds, msgs = timed(k, "%gpumon status")
    assert seconds < 1.0
    assert SILENT.search(text(msgs)), text(msgs)
    assert (
        "NVML: unavailable: NVML is not answering: not started 1 s after loading; %gpumon status "
        "says when it answers"
    ) in text(msgs)
    wait = (
        "_d = time.monotonic() + 30\n"
        "while not getattr(mon._session.devices_started_late(), 'answered', False) and "
        "time.monotonic() < _d:\n"
        "    time.sleep(0.05)\n"
        "pynvml._config['init_delay'] = 0"
    )
    k.run(wait)
    assert "%reload_ext nbgpumon watches them" in text(k.run("%gpumon status"))
    assert "watching 1 GPU (Fake H200)" in stdout(k.run("%reload_ext nbgpumon"))
