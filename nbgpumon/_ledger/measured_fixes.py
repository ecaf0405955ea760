"""What ``whatif`` measured of each fix, read back from the ledger's regions.

Its runs are the regions ``whatif baseline``, then ``whatif amp``, ``whatif checkpointing``, ...;
``%gpumon advise`` and the out-of-memory post-mortem quote each fix's saving on the user's own
step from them, and, read from the records, a recording's advice quotes them too. For each fix,
the newest run wins: its peak against the baseline of the same ``whatif``, on the GPU where that
baseline peaked highest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .._sources.frameworks import frameworks
from .records import CellRecord

REGION = "whatif "  # the label of each run's region begins so (_session/analysis/whatif.py)
BASELINE = REGION + "baseline"
ACTIVATIONS, CACHE = "activations", "cache"  # what a fix lowers (Fix.relieves)


@dataclass(frozen=True, slots=True)
class MeasuredFix:
    """One fix as ``whatif`` measured it: its peak's change against the baseline (``change``,
    -0.38 for 38% lower; None where it ran out of memory) and the cell ``whatif`` ran in."""

    fix: str  # "amp", "checkpointing", "accumulate=2", ...
    change: float | None
    cell: str  # "[14]"
    relieves: str = ACTIVATIONS  # what the fix lowers (Fix.relieves; accumulate: activations)
    framework: str = ""  # the plug-in whose fix it is ("": accumulate, any framework's step)

    @property
    def out_of_memory(self) -> bool:
        return self.change is None


def measured_fixes(records: Iterable[CellRecord]) -> dict[str, MeasuredFix]:
    """Each fix's newest measurement, by its name, oldest first; {} where ``whatif`` never ran."""
    found: dict[str, MeasuredFix] = {}
    owners = {
        fix.name: (f.name, fix.relieves) for f in frameworks() if f.trials for fix in f.trials.fixes
    }
    baseline: CellRecord | None = None
    gpu: int | None = None  # the device index of the baseline's highest peak
    for record in records:
        if record.kind != "region" or not record.label.startswith(REGION):
            continue
        if record.label == BASELINE:
            baseline, gpu = record, _highest(record)
            continue
        if baseline is None or gpu is None or record.execution_count != baseline.execution_count:
            continue  # (a region so named by the user, not after a baseline of its cell)
        fix = record.label[len(REGION) :]
        base, peak = _peak_on(baseline, gpu), _peak_on(record, gpu)
        if record.status == "oom":
            change = None
        elif record.status != "ok":
            continue  # (a fix the step refused, as no_grad a step that calls backward)
        elif base and peak is not None:
            change = peak / base - 1
        else:
            continue  # (no exact figure to compare)
        found.pop(fix, None)  # (the newest last)
        cell = baseline.name.split(" ", 1)[0]
        framework, relieves = owners.get(fix, ("", ACTIVATIONS))
        found[fix] = MeasuredFix(fix, change, cell, relieves, framework)
    return found


def _highest(record: CellRecord) -> int | None:
    """The index of the device where ``record`` peaked highest."""
    peaks = [(d.peak_allocated, d.index) for d in record.devices if d.peak_allocated]
    return max(peaks)[1] if peaks else None


def _peak_on(record: CellRecord, index: int) -> int | None:
    return next((d.peak_allocated for d in record.devices if d.index == index), None)
