"""``nbgpumon.monitor()`` shows the public API only: the session it holds stays private."""

from __future__ import annotations

import numpy as np
import pytest

from nbgpumon._api.monitor import Monitor
from nbgpumon._session.facts.session_data import SessionData

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


def test_the_monitor_is_the_live_session_data(mon):
    assert isinstance(mon, SessionData)
    mon.mark("here")
    with mon.track("part"):
        pass
    assert [r.label for r in mon.records] == ["part"] and mon.marks[-1][1] == "here"
    assert mon.records == mon._session.ledger.records()  # one store, read through one door


def test_a_cell_is_stored_once_with_what_its_forensics_found(tmp_path):
    shell = shell_with()
    mon = Monitor(nvml_module=None, shell=lambda: shell)
    try:
        mon.config.leak_threshold = 2**20
        pipeline = mon.cell_pipeline
        changed = []
        pipeline.on_changed = lambda: changed.append(len(mon.records))
        opened = pipeline.begin(1, "kept = np.ones(2**22)")
        shell.user_ns["kept"] = np.ones(2**22)  # 32 MiB written: resident
        outcome = pipeline.end(opened, "ok", "", 1, None)
        (stored,) = mon.records
        assert stored is outcome.record  # the one record, not replaced after the forensics
        assert stored.retention is not None and stored.retention.holders[0][0] == "kept"
        assert changed == [1]  # the views heard of it once, after it was stored
        assert outcome.oom is None and outcome.traced == () and outcome.notices == ()
    finally:
        mon.close()
