"""The advice and the out-of-memory post-mortem quote what ``whatif`` measured on the user's own
step (issue 44): read back from the ledger's ``whatif`` regions, so a recording's advice quotes
it too; each fix's newest run wins; where nothing was measured, one line says how to measure it.
The measurements on a GPU: tests/test_whatif_gpu.py."""

from __future__ import annotations

import numpy as np
from test_advisor import GIB, device, quiet_samples, session

from nbgpumon._forensics.postmortem import OomFacts
from nbgpumon._ledger.measured_fixes import measured_fixes
from nbgpumon._ledger.records import CellRecord
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._views.memory.oom import report
from nbgpumon._views.words.advice import advise, recorded_evidence
from nbgpumon._views.words.measured_fixes import UNMEASURED

# a whatif in cell [14]: the baseline peaked at 8 GiB
FIRST = (("baseline", 8 * GIB, "ok"), ("amp", 7 * GIB, "ok"), ("checkpointing", 4 * GIB, "ok"),
         ("expandable_segments", 6 * GIB, "ok"))  # fmt: skip


def regions(count: int, runs, first_index: int = 0) -> list[CellRecord]:
    """The regions one whatif leaves in the ledger, in cell [count]."""
    out = []
    for n, (fix, peak, status) in enumerate(runs):
        d = device()
        d = type(d)(**{**{f: getattr(d, f) for f in d.__slots__}, "peak_allocated": peak})
        record = CellRecord(
            index=first_index + n, kind="region", execution_count=count, cell_id=None,
            label=f"whatif {fix}", start=1.7e9 + n, duration=0.1, status=status, error="",
            devices=(d,), rss_before=None, rss_after=None, rss_peak=None, rss_peak_exact=False,
        )  # fmt: skip
        out.append(record)
    return out


def near_the_limit() -> dict[str, np.ndarray]:
    samples = quiet_samples()
    samples["mem_used"] = np.linspace(20, 133, 100) * GIB  # the memory-limit hint fires
    return samples


def test_the_memory_limit_hint_quotes_the_fixes_that_lower_activations():
    (hint,) = advise(recorded_evidence(session(near_the_limit(), regions(14, FIRST))))
    assert hint.topic == "memory limit"
    assert hint.measured == (
        "amp −12% peak, checkpointing −50% peak (measured on your step by whatif in [14])"
    )  # (expandable segments lower the cache, not the activations: not quoted here)
    assert str(hint).endswith("\n  measured: " + hint.measured)


def test_with_nothing_measured_the_hint_says_how_to_measure_it():
    (hint,) = advise(recorded_evidence(session(near_the_limit(), [])))
    assert hint.measured == UNMEASURED and "nbgpumon.whatif(" in str(hint)


def test_the_newest_run_of_a_fix_wins_and_one_out_of_memory_says_so():
    # no_grad refused (the step calls backward: its region ended in an error), fused changed
    # nothing: the first is not quoted, the second as whatif's table says it
    newer = (("baseline", 10 * GIB, "ok"), ("amp", 5 * GIB, "ok"), ("accumulate=2", 0, "oom"),
             ("no_grad", 2 * GIB, "error"), ("fused=True", 10 * GIB - 2**20, "ok"))  # fmt: skip
    # a region the user named so, in a cell with no baseline of its own, is no whatif's
    stray = regions(30, (("amp", GIB, "ok"),), first_index=20)
    records = regions(14, FIRST) + regions(21, newer, first_index=10) + stray
    measured = measured_fixes(records)
    assert [(m.fix, m.cell) for m in measured.values()] == [
        ("checkpointing", "[14]"), ("expandable_segments", "[14]"), ("amp", "[21]"),
        ("accumulate=2", "[21]"), ("fused=True", "[21]"),
    ]  # fmt: skip
    assert measured["amp"].change == -0.5 and measured["accumulate=2"].out_of_memory
    assert measured["expandable_segments"].relieves == "cache"  # (torch's fix says so)
    (hint,) = advise(recorded_evidence(session(near_the_limit(), records)))
    assert hint.measured == (
        "checkpointing −50% peak (measured on your step by whatif in [14]); amp −50% peak, "
        "accumulate=2 still ran out of memory, fused=True ±0% peak (measured on your step by "
        "whatif in [21])"
    )


def test_the_post_mortem_quotes_every_fix_measured_or_how_to_measure():
    stats = AllocatorStats(allocated=7 * GIB, reserved=8 * GIB, peak_allocated=None,
                           allocated_total=None)  # fmt: skip
    facts = OomFacts("[15]", "", GIB, 0, "H200", None, None, {"torch": stats}, None, (), "torch")
    measured = tuple(measured_fixes(regions(14, FIRST)).values())
    text = report(facts, measured)
    assert text.splitlines()[-1] == (
        "  amp −12% peak, checkpointing −50% peak, expandable_segments −25% peak "
        "(measured on your step by whatif in [14])"
    )
    assert report(facts).splitlines()[-1] == f"  {UNMEASURED}"


def test_a_pool_hint_quotes_only_its_own_frameworks_fixes_that_lower_the_cache():
    fragmented = quiet_samples()
    fragmented["reserved"] = np.where(np.arange(100) > 60, 30 * GIB, 11 * GIB).astype(float)
    fragmented["inactive_split"] = np.full(100, 4.0 * GIB)
    (hint,) = advise(recorded_evidence(session(fragmented, regions(14, FIRST))))
    assert hint.topic == "fragmentation"
    assert (
        hint.measured == "expandable_segments −25% peak (measured on your step by whatif in [14])"
    )

    preallocated = quiet_samples()
    preallocated["jax.reserved"] = np.full(100, 105.0 * GIB)
    preallocated["jax.allocated"] = np.full(100, 1.0 * GIB)
    (hint,) = advise(recorded_evidence(session(preallocated, regions(14, FIRST))))
    assert hint.topic == "JAX preallocation" and hint.measured == ""  # (torch's fix: not JAX's)
    assert "measured:" not in str(hint)
