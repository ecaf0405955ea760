"""``%gpumon advise``: each hint fires on a recorded scenario that shows its evidence and stays
silent on one that doesn't."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from nbgpumon._api.recorded import Recorded
from nbgpumon._ledger.records import CellRecord, DeviceUsage, Retention
from nbgpumon._recording.schema import today_column
from nbgpumon._views.words.advice import advise, recorded_evidence

from notebook_runner import run_cells

GIB = 2**30
GPU_COLUMNS = [
    "mem_used", "mem_total", "gpu_util", "allocated", "reserved", "inactive_split",
    "jax.allocated", "jax.reserved", "cupy.allocated", "cupy.reserved",
]  # fmt: skip


def device(alloc_total: int | None = GIB, retained_after: int = 0) -> DeviceUsage:
    return DeviceUsage(
        index=0, cuda_index=0, name="H200", allocated_before=0,
        allocated_after=retained_after, reserved_before=0, reserved_after=0,
        device_used_before=0, device_used_after=0, peak_allocated=GIB, peak_exact=True,
        allocated_total=alloc_total, util_mean=None, util_max=None,
    )  # fmt: skip


def cell(n: int, start: float, duration: float, label: str = "", util: float | None = 95.0,
         kept: int = 0, retention: Retention | None = None) -> CellRecord:  # fmt: skip
    d = device(retained_after=kept)
    d = DeviceUsage(**{**{f: getattr(d, f) for f in d.__slots__}, "util_mean": util})
    return CellRecord(
        index=n, kind="cell", execution_count=n, cell_id=None, label=label or f"step({n})",
        start=start, duration=duration, status="ok", error="", devices=(d,),
        rss_before=None, rss_after=None, rss_peak=None, rss_peak_exact=False,
        retention=retention,
    )  # fmt: skip


def session(samples: dict[str, np.ndarray], records: list[CellRecord], seconds: int = 100):
    times = 1.7e9 + np.arange(seconds, dtype=np.float64)
    columns = [today_column(f"gpu0.{m}") for m in GPU_COLUMNS]  # gpu0.nvml.mem_used, ...
    values = np.full((seconds, len(columns)), np.nan)
    for name, series in samples.items():
        values[:, columns.index(today_column(f"gpu0.{name}"))] = series
    return Recorded(
        path=Path("x.sqlite"), session_id=1, started=times[0], host="h",
        gpus=[{"index": 0, "name": "H200", "memory_total": 140 * GIB}], driver="", versions={},
        columns=columns, times=times, values=values, records=records, marks=[],
    )  # fmt: skip


def topics(s: Recorded) -> list[str]:
    return [h.topic for h in advise(recorded_evidence(s))]


def flat(value: float, n: int = 100) -> np.ndarray:
    return np.full(n, float(value))


def quiet_samples() -> dict[str, np.ndarray]:
    return {
        "mem_used": flat(20 * GIB), "mem_total": flat(140 * GIB), "gpu_util": flat(95),
        "allocated": flat(10 * GIB), "reserved": flat(11 * GIB), "inactive_split": flat(0),
    }  # fmt: skip


def test_a_healthy_session_gets_no_hint():
    s = session(quiet_samples(), [cell(1, 1.7e9, 50.0)])
    assert topics(s) == []


def test_fragmentation_fires_on_reserved_far_above_allocated_and_names_the_cell():
    samples = quiet_samples()
    samples["reserved"] = np.where(np.arange(100) > 60, 30 * GIB, 11 * GIB).astype(float)
    samples["inactive_split"] = flat(4 * GIB)
    s = session(samples, [cell(7, 1.7e9 + 55, 20.0)])
    (hint,) = advise(recorded_evidence(s))
    assert hint.topic == "fragmentation"
    assert "torch held 30.0 GiB but only 10.0 GiB was in tensors (20.0 GiB, 67% of it idle)" in (
        hint.evidence
    )
    assert "during [7]" in hint.evidence and "4.0 GiB in split blocks" in hint.evidence
    assert "expandable_segments:True" in hint.advice


def test_a_small_or_proportionate_cache_is_not_fragmentation():
    samples = quiet_samples()
    samples["allocated"], samples["reserved"] = flat(60 * GIB), flat(70 * GIB)  # 10 GiB, 14 %
    assert topics(session(samples, [])) == []


def test_input_pipeline_fires_on_a_long_cell_with_an_idle_gpu_only():
    records = [cell(3, 1.7e9, 120.0, util=31.0), cell(4, 1.7e9 + 200, 5.0, util=10.0)]
    (hint,) = advise(recorded_evidence(session(quiet_samples(), records)))
    assert hint.topic == "input pipeline"
    assert hint.evidence.endswith("[3] ran 2 min 0 s at 31% GPU")  # the short [4] is not cited
    assert "num_workers" in hint.advice and "pin_memory" in hint.advice
    cpu_only = [cell(3, 1.7e9, 120.0, util=0.0)]
    for no_gpu_work in ("allocated_total", "peak_allocated"):
        object.__setattr__(cpu_only[0].devices[0], no_gpu_work, 0)
    assert topics(session(quiet_samples(), cpu_only)) == []
    # a model built on the host and copied over: memory on the GPU, no kernel at all
    built = cell(3, 1.7e9, 16.0, util=0.0)
    object.__setattr__(built.devices[0], "util_max", 2.0)
    assert topics(session(quiet_samples(), [built])) == []
    fed = cell(3, 1.7e9, 16.0, util=30.0)  # the same time, with bursts of work: waiting
    object.__setattr__(fed.devices[0], "util_max", 98.0)
    assert topics(session(quiet_samples(), [fed])) == ["input pipeline"]


def test_memory_limit_fires_near_the_total_only():
    samples = quiet_samples()
    samples["mem_used"] = np.linspace(20, 133, 100) * GIB
    (hint,) = advise(recorded_evidence(session(samples, [])))
    assert hint.topic == "memory limit" and "133 GiB of 140 GiB in use (95%)" in hint.evidence
    samples["mem_used"] = flat(120 * GIB)  # 86 %
    assert topics(session(samples, [])) == []


def test_rerun_growth_fires_when_every_run_of_a_cell_keeps_more():
    held = Retention("cuda", (("cache", 3 * GIB),))
    label = "cache.append(model(x))"
    records = [cell(n, 1.7e9 + n, 1.0, label, kept=GIB) for n in (2, 5)]
    records.append(cell(9, 1.7e9 + 9, 1.0, label, kept=GIB, retention=held))
    (hint,) = advise(recorded_evidence(session(quiet_samples(), records)))
    assert hint.topic == "re-run growth"
    assert "ran 3 times ([2], [5], [9])" in hint.evidence
    assert "1.0 GiB, 1.0 GiB, 1.0 GiB (3.0 GiB in all); held by cache 3.0 GiB" in hint.evidence
    once_kept = [cell(2, 1.7e9, 1.0, label, kept=GIB), cell(5, 1.7e9 + 5, 1.0, label, kept=0)]
    assert topics(session(quiet_samples(), once_kept)) == []


def test_jax_preallocation_fires_on_a_pool_far_above_its_arrays_only():
    samples = quiet_samples()
    samples["jax.reserved"], samples["jax.allocated"] = flat(105 * GIB), flat(GIB)
    (hint,) = advise(recorded_evidence(session(samples, [cell(3, 1.7e9, 50.0)])))
    assert hint.topic == "JAX preallocation"
    assert "JAX's pool held 105 GiB while its arrays used at most 1.0 GiB" in hint.evidence
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in hint.advice
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in hint.advice
    samples["jax.reserved"], samples["jax.allocated"] = flat(12 * GIB), flat(10 * GIB)
    assert topics(session(samples, [])) == []  # a pool that grew as needed


def test_cupy_pool_cache_fires_on_freed_blocks_kept_in_the_pool_only():
    samples = quiet_samples()
    samples["cupy.reserved"] = flat(8 * GIB)
    samples["cupy.allocated"] = np.where(np.arange(100) > 50, 0.5 * GIB, 8 * GIB)
    (hint,) = advise(recorded_evidence(session(samples, [])))
    assert hint.topic == "CuPy pool cache"
    assert "CuPy's pool cached 7.5 GiB of freed blocks (live arrays: 512 MiB)" in hint.evidence
    assert "not a leak" in hint.evidence and "free_all_blocks()" in hint.advice
    samples["cupy.allocated"] = flat(7.5 * GIB)
    assert topics(session(samples, [])) == []


@pytest.mark.parametrize("runs", [1, 3])
def test_in_a_real_kernel_a_growing_cell_is_found_and_a_single_run_is_not(runs):
    grow = "cache.append(np.ones(2**22))"
    out = run_cells(
        ["%load_ext nbgpumon", "import numpy as np\ncache = []", *[grow] * runs, "%gpumon advise"]
    )
    text = out[-1].stdout
    if runs == 1:
        assert text.startswith("nbgpumon advise: nothing to suggest"), text
    else:
        assert text.startswith(f"1. re-run growth: {grow!r} ran 3 times ([3], [4], [5])"), text
        kept = re.search(r"host memory: ([\d.]+) MiB, ([\d.]+) MiB, ([\d.]+) MiB \(", text)
        assert kept, text
        # each run keeps its 32 MiB array; resident memory adds a little noise on top
        assert all(31.5 <= float(x) <= 40 for x in kept.groups()), text


def test_optimizer_state_fires_on_state_far_above_the_parameters_only():
    from dataclasses import replace

    from nbgpumon._views.words.advice import evidence

    ev = evidence(session(quiet_samples(), []))
    mib = 2**20
    adam = {0: {"parameters": 475 * mib, "optimizer state": 950 * mib, "gradients": 475 * mib}}
    (hint,) = advise(replace(ev, memory_kinds=adam))
    assert hint.topic == "optimizer state"
    assert hint.evidence == (
        "gpu0 H200: the optimizer state holds 950 MiB, 2.0× the parameters (475 MiB)"
    )
    assert "AdamW8bit" in hint.advice and "SGD with momentum" in hint.advice
    momentum = {0: {"parameters": 475 * mib, "optimizer state": 475 * mib}}  # SGD's: 1×
    small = {0: {"parameters": 16 * mib, "optimizer state": 32 * mib}}  # under 256 MiB
    for kinds in (momentum, small, {}):
        assert [h.topic for h in advise(replace(ev, memory_kinds=kinds))] == []


def _split(n: int, stayed: int, peak: int, kinds: tuple = ()) -> CellRecord:
    """Cell ``n`` that held ``stayed`` at its end (by ``kinds``) and peaked at ``peak``."""
    from dataclasses import replace

    c = cell(n, 10.0 * n, 5.0)
    d = replace(c.devices[0], allocated_after=stayed, peak_allocated=peak,
                kinds_after=kinds or (("parameters", stayed),))  # fmt: skip
    return replace(c, devices=(d,))


def test_activations_fire_on_a_peak_mostly_freed_before_the_cells_end_only():
    heavy = _split(3, 2 * GIB, 8 * GIB)  # 6 GiB of 8 freed before its end
    lighter = _split(4, 2 * GIB, 5 * GIB)
    (hint,) = advise(recorded_evidence(session(quiet_samples(), [lighter, heavy])))
    assert hint.topic == "activations"
    assert hint.evidence == (
        "gpu0 H200: [3]'s peak of 8.0 GiB was 75% activations and temporaries (6.0 GiB, freed "
        "before its end) (and 1 more cell like it)"
    )
    assert "checkpointing" in hint.advice and "autocast" in hint.advice
    mostly_kept = _split(5, 6 * GIB, 8 * GIB)  # 2 GiB of 8: the peak is what it keeps
    small = _split(6, 64 * 2**20, 600 * 2**20)  # all temporaries, under 1 GiB
    unread = cell(7, 70.0, 5.0)  # no kinds read (no split): says nothing
    assert topics(session(quiet_samples(), [mostly_kept, small, unread])) == []


def test_a_recordings_kinds_at_a_cells_end_give_the_optimizer_state_hint():
    mib = 2**20
    kinds = (("parameters", 475 * mib), ("gradients", 475 * mib), ("optimizer state", 950 * mib))
    step = _split(2, 1900 * mib, 1900 * mib, kinds)
    assert topics(session(quiet_samples(), [step])) == ["optimizer state"]
