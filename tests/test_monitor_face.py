"""``nbgpumon.monitor()`` shows the public API only: the session it holds stays private."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from nbgpumon._api.monitor import Monitor
from nbgpumon._session.config import GPUMon
from nbgpumon._session.controls.cluster import ClusterControl
from nbgpumon._session.facts.session_data import SessionData
from nbgpumon._session.session import Session

from fake_shell import shell_with


@pytest.fixture
def mon():
    mon = Monitor(nvml_module=None)
    yield mon
    mon.close()


def test_the_monitor_shows_no_internals(mon):
    public = {name for name in dir(mon) if not name.startswith("_")}
    internals = {"nvml", "sampler", "ledger", "device_source", "device_ask", "allocators", "host"}
    assert not public & internals
    assert {"cells", "holders", "free", "record", "mark", "track", "trace", "nvtx"} <= public


def test_the_monitor_shows_the_session_s_one_live_data(mon):
    data = mon.data
    assert isinstance(data, SessionData) and data is mon._session.data  # the one, not a copy
    mon.mark("here")
    with mon.track("part"):
        pass
    assert [r.label for r in data.records] == ["part"] and data.marks[-1][1] == "here"
    assert data.records == mon._session.ledger.records()  # one store, read through one door


def test_the_monitor_takes_the_session_s_options_and_shows_the_cluster_read_s(mon):
    assert inspect.signature(Monitor).parameters == inspect.signature(Session).parameters
    _, *read = inspect.signature(ClusterControl.read).parameters.values()
    assert list(inspect.signature(mon.read_cluster).parameters.values()) == read
    mon.read_cluster(url=None, wait=0)  # taken by the names it shows (else a TypeError)
    config = GPUMon(interval=0.5)
    other = Monitor(config, None)  # the options by position too, as before
    try:
        assert other.config is config and not other.has_gpu
    finally:
        other.close()


def test_a_cell_is_stored_once_with_what_its_forensics_found(tmp_path):
    shell = shell_with()
    mon = Monitor(nvml_module=None, shell=lambda: shell)
    try:
        mon.config.leak_threshold = 2**20
        pipeline = mon.cell_pipeline
        changed = []
        pipeline.on_changed = lambda: changed.append(len(mon.data.records))
        opened = pipeline.begin(1, "kept = np.ones(2**22)")
        shell.user_ns["kept"] = np.ones(2**22)  # 32 MiB written: resident
        outcome = pipeline.end(opened, "ok", "", 1, None)
        (stored,) = mon.data.records
        assert stored is outcome.record  # the one record, not replaced after the forensics
        assert stored.retention is not None and stored.retention.holders[0][0] == "kept"
        assert changed == [1]  # the views heard of it once, after it was stored
        assert outcome.oom is None and stored.traced == () and outcome.notices == ()
    finally:
        mon.close()
