"""In a real kernel: the sampler waits its idle interval while nothing moves, and a cell brings
back its interval for as long as the cell runs."""

from __future__ import annotations

import json

import pytest

from kernel_client import Kernel
from notebook_runner import fake_nvml_env
from waiting import until

GIB = 2**30
# a front end's own code: not a cell, so it does not wake the sampler
PROBE = (
    "import json as _json, nbgpumon as _nbg\n"
    "_q = _nbg.monitor()._session.sampler.quiet\n"
    "import time as _time\n"
    "print('QUIET=' + _json.dumps([_q.asleep, _q.quiet_share(_time.monotonic())]))"
)


@pytest.fixture
def kernel(monkeypatch):
    env = fake_nvml_env(devices=[{"name": "Fake GPU", "used": GIB, "total": 16 * GIB, "util": 0}])
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    started = Kernel()
    yield started
    started.stop()


def _printed(kernel: Kernel, code: str, key: str, **options: bool):
    msgs = kernel.run(code, **options)
    out = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    (line,) = [x for x in out.splitlines() if x.startswith(key + "=")]
    return json.loads(line[len(key) + 1 :])


def _quiet(kernel: Kernel) -> tuple[bool, float]:
    return tuple(_printed(kernel, PROBE, "QUIET", store_history=False))


def test_an_idle_kernel_samples_at_its_idle_interval_and_a_cell_at_its_interval(kernel):
    kernel.run("%load_ext nbgpumon\n%config GPUMon.idle_interval = 30\nimport time")
    until(lambda: _quiet(kernel)[0], "the sampler quiet in an idle kernel")
    # a cell that waits for three ticks: an interval apart while it runs, not 30 s apart
    ticks = _printed(
        kernel,
        "_s = _nbg.monitor()._session.sampler\n"
        "_t0, _end = _s.ticks, time.monotonic() + 20\n"
        "while _s.ticks < _t0 + 3 and time.monotonic() < _end:\n"
        "    time.sleep(0.01)\n"
        "print('TICKS=' + _json.dumps([_s.ticks - _t0, _s.quiet.asleep]))",
        "TICKS",
    )
    assert ticks == [3, False] or (ticks[0] > 3 and ticks[1] is False), ticks
    # quiet again once the cell is over, and the cell is in the ledger
    _asleep, share = until(lambda: (q := _quiet(kernel))[0] and q, "quiet again")
    assert 0 < share < 1
    labels = _printed(
        kernel, "print('CELLS=' + _json.dumps([r.label for r in _nbg.cells()]))", "CELLS",
        store_history=False,
    )  # fmt: skip
    assert any("_s = " in label for label in labels), labels
    status = "".join(
        m["content"].get("text") or m["content"].get("data", {}).get("text/plain", "")
        for m in kernel.run("%gpumon status")
        if m["msg_type"] in ("stream", "display_data", "execute_result")
    )
    assert "while idle: every 30 s" in status, status


def test_a_short_cell_keeps_the_sampler_at_its_interval_for_a_while_after_it(kernel):
    # (its row and the chart's updates come an interval after it, not an idle interval)
    kernel.run("%load_ext nbgpumon\n%config GPUMon.idle_interval = 30\nimport nbgpumon as _nbg")
    cell = "_s = _nbg.monitor()._session.sampler\n_t0 = _s.ticks"  # over within a tick
    for _ in range(5):  # (the first cells grow the kernel's RSS, which alone wakes it)
        assert not [m for m in kernel.run(cell) if m["msg_type"] == "error"]
    until(lambda: _quiet(kernel)[0], "the sampler quiet in an idle kernel")
    kernel.run(cell)
    # not a cell: it waits for three ticks after the cell's end without waking the sampler
    ticks = _printed(
        kernel,
        "_end = _time.monotonic() + 20\n"
        "while _s.ticks < _t0 + 3 and _time.monotonic() < _end:\n"
        "    _time.sleep(0.01)\n"
        "print('TICKS=' + _json.dumps(_s.ticks - _t0))",
        "TICKS",
        store_history=False,
    )
    assert ticks >= 3, ticks
    until(lambda: _quiet(kernel)[0], "quiet again two seconds later")
