"""Status is facts below and words above: the views say a session's status from its facts
alone, a recording's and a live session's the same way in every view."""

from __future__ import annotations

from nbgpumon._forensics.tracing_answer import ARMED, TracingState
from nbgpumon._sampling.sampler_cost import CostReport
from nbgpumon._session.device_open import LateStart
from nbgpumon._session.facts.devices import Device
from nbgpumon._session.facts.nvtx import NvtxState
from nbgpumon._session.facts.status import (
    AllocatorOnDevice,
    DeviceSourceFacts,
    FrameworkFacts,
    GpuFacts,
    LiveStatus,
    ProcessFacts,
    RecordedStatus,
    SamplerFacts,
    Status,
)
from nbgpumon._views.status.session_status import (
    not_answering,
    not_started_line,
    process_lines,
    status_line,
    status_lines,
)

GIB = 2**30
GPU = Device(0, "Toy GPU", 8 * GIB, 0, "GPU-toy")


def _live(**devices) -> Status:
    sampler = SamplerFacts(
        0.1, 0.5, 0.5, 1.0, 2.0, 7, 20e-6, CostReport(0.0, 0, 0.0), "",
        idle_interval=1.0, quiet_share=0.25,
    )  # fmt: skip
    facts = {
        "label": "Toy",
        "status": "ok",
        "available": True,
        "driver_version": "1.0",
        "binding_version": None,
        "gpus": (GpuFacts(GPU, lost=False, mig_mode=False),),
        "unavailable": ((0, "power", "not supported"),),
        "mapping_note": "",
        "notes": (),
        "started_late": None,
        "silent_for": 0.0,
    } | devices
    live = LiveStatus(
        sampler=sampler,
        devices=DeviceSourceFacts(**facts),
        frameworks=(
            FrameworkFacts("toy", "Toy FW", False, "", (AllocatorOnDevice(0, GIB, 2 * GIB, None),),
                           "peaks its own way"),
            FrameworkFacts("other", "Other", False, "other not imported", None, ""),
        ),
        tracing=TracingState(ARMED, "a problem"),
        traced_by=(),
        nvtx=NvtxState(on=False),
        host="ok",
        host_peak_exact=False,
        peak_mode="preserve",
        reset_means=(),
        preserve_means=(),
        recording=None,
        exporter=None,
        summary=True,
        records=3,
    )  # fmt: skip
    procs = (ProcessFacts("gpu0", None, "python", False, GIB),)
    return Status("sampling", 0.1, live=live, processes=procs)


def test_a_live_status_is_said_from_its_facts():
    status = _live()
    assert status_line(status) == (
        "sampling every 0.1 s · unavailable: gpu0 power · Toy FW: active on cuda:0"
    )
    lines = status_lines(status)
    assert lines[0].startswith("sampler: running, memory every 0.1 s, utilization and RSS every")
    assert lines[2] == "sampler cost: no tick yet"  # (its own words: test_sampler_cost.py)
    assert lines[1] == (
        "while idle: every 1 s (no cell running, no child process, GPU memory, utilization "
        "and RSS unchanged), 25% of the time so far"
    )
    assert "Toy: driver 1.0, binding ?, 1 GPU" in lines
    assert "    power: unavailable (not supported)" in lines
    assert "  Toy FW: active: cuda:0 1.0 GiB in use, 2.0 GiB reserved; peaks its own way" in lines
    assert "  Other: not imported" in lines
    assert "allocation tracing armed (a problem)" in lines
    assert "recording: off (%gpumon record PATH starts one)" in lines
    assert lines[-3] == "summary after each cell: on; 3 records in the ledger"
    assert process_lines(status) == ["gpu0: PID unknown python: 1.0 GiB"]
    assert lines[-2:] == [
        "processes on the GPUs (the driver's list):",
        "  gpu0: PID unknown python: 1.0 GiB",
    ]


def test_a_device_source_that_is_silent_is_said_in_the_line_and_the_lines():
    status = _live(silent_for=3.24, gpus=(), unavailable=(), status="Toy found no GPU")
    said = "Toy has not answered for 3.2 s (figures unavailable)"
    assert status_line(status).split(" · ")[1:3] == [said, "no GPU: Toy found no GPU"]
    assert said in status_lines(status)


def test_a_device_source_that_started_late_is_said_as_it_went():
    still = LateStart("Toy", answered=False, seconds=4.04, available=False, status="", gpus=0)
    failed = LateStart("Toy", True, 6.0, available=False, status="Toy found no driver", gpus=0)
    found = LateStart("Toy", True, 6.0, available=True, status="ok", gpus=2)
    said = [not_answering(_live(started_late=s).live.devices) for s in (still, failed, found)]
    assert said == [
        "Toy has not answered for 4.0 s (still starting)",
        "Toy answered after 6.0 s: Toy found no driver",
        "Toy answered after 6.0 s, with 2 GPUs: %reload_ext nbgpumon watches them",
    ]
    assert said[0] in status_line(_live(started_late=still)).split(" · ")
    # the status the monitor gives the source it never opened (test_stuck_driver.py's kernel)
    idle = _live(started_late=still, status=not_started_line("Toy"), available=False)
    assert (
        "Toy: unavailable: Toy is not answering: not started 1 s after loading; %gpumon "
        "status says when it answers" in status_lines(idle)
    )


def test_a_recording_s_status_is_its_line_then_its_machine():
    recorded = RecordedStatus("run.sqlite (session 1)", 1200, 3, None, "node-a", "", (GPU,))
    status = Status("recorded", 0.1, recorded=recorded)
    line = "recorded: run.sqlite (session 1), 1,200 samples, and 3 buckets of the older ones"
    assert status_line(status) == line
    assert status_lines(status) == [line, "host: node-a; driver ?", "  gpu0: Toy GPU"]
    assert process_lines(status) == []
