"""What the cell path costs: each cell's start and end timed by stage, on the main thread, and
how much of it the cell's reply waited for. A quiet cell's end is finished after its reply,
unless the next cell comes first: then that cell's reply waits for it, and it counts as waited
for.

The last ``KEEP`` cells' times stay in one fixed array of integers, so that timing costs cell
10,000 what it cost cell 10 (a clock read and an addition a stage) and the figures are there for
``%gpumon status`` beside the sampler's share. A stage's time is from the end of the one before
it; the time the cell's own code runs is no stage.
"""

from __future__ import annotations

import dataclasses
from array import array
from dataclasses import dataclass
from time import perf_counter_ns

# the stages, in the order a cell meets them; the index of each is its column
STAGES = (
    "waits",  # the sampler's preparation, the children of earlier cells, numpy's first fold
    "namespace",  # the namespace's ids, for the leak verdict
    "start readings",  # the allocators, the device, RSS; peaks reset
    "opened",  # the NVTX range, the children's baseline, the views told
    "end readings",
    "children",  # the processes it started, charged to it
    "holders",  # the leak verdict
    "kinds",  # its memory by kind
    "tracing",  # what it left alive by line, what its peak held
    "post-mortem",  # after an out-of-memory error
    "store",  # the ledger, the recorder's queue
    "views",  # the views told
    "lines",  # the lines printed under it
)
(
    WAITS,
    NAMESPACE,
    START_READINGS,
    OPENED,
    END_READINGS,
    CHILDREN,
    HOLDERS,
    KINDS,
    TRACING,
    POST_MORTEM,
    STORE,
    VIEWS,
    LINES,
) = range(len(STAGES))
KEEP = 1000  # cells whose times are kept


@dataclass(frozen=True)
class StageCost:
    """One stage's cost over the cells kept, in seconds."""

    stage: str
    median: float
    p99: float


@dataclass(frozen=True)
class CellPathCost:
    """What the cell path cost the last ``cells`` cells, start and end together, in seconds;
    ``stages``: each stage's, the costliest (by median) first, those that cost nothing left out."""

    cells: int
    median: float
    p99: float
    stages: tuple[StageCost, ...]
    # what the cells' replies waited for, where some cell's end was finished after its reply
    # while the kernel was idle
    waited_median: float | None = None
    waited_p99: float | None = None


class CellClock:
    """Times each cell's stages (main thread) and keeps the last ``keep`` cells'."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        width = len(STAGES)
        self._times = array("q", bytes(8 * width * keep))  # nanoseconds, a row per cell
        self._totals = array("q", bytes(8 * keep))  # each row's sum
        self._waited = array("q", bytes(8 * keep))  # what of it came before the reply
        self._replied: int | None = None  # the row's sum when the reply went (put off: the rest)
        self._row = [0] * width  # the cell being timed
        self._last = 0
        self._cells = 0  # cells timed in all
        self._report: tuple[int, CellPathCost | None] = (0, None)  # the last, and of how many

    def start(self) -> None:
        """A cell's start begins: its stages from now."""
        self._row = [0] * len(STAGES)
        self._replied = None
        self._last = perf_counter_ns()

    def resume(self) -> None:
        """A cell's end begins: what ran since the last lap was the cell's own code."""
        self._last = perf_counter_ns()

    def lap(self, stage: int) -> None:
        """``stage`` ends now: the time since the last lap is its."""
        now = perf_counter_ns()
        self._row[stage] += now - self._last
        self._last = now

    def replied(self) -> None:
        """The cell's reply goes now; the rest of its end comes after it."""
        self._replied = sum(self._row)

    def done(self, waited_for: bool = False) -> None:
        """The cell's end is over: keep its times, over the oldest kept. ``waited_for``: what
        came after its reply was waited for all the same (the next cell's start finished it:
        that cell's reply waited for it)."""
        width, row = len(STAGES), self._row
        at = self._cells % self._keep
        self._times[at * width : (at + 1) * width] = array("q", row)
        total = sum(row)
        self._totals[at] = total
        self._waited[at] = total if self._replied is None or waited_for else self._replied
        self._cells += 1

    def report(self) -> CellPathCost | None:
        """The kept cells' costs; None before the first cell's end. (The status the live chart
        reads every 2 s asks too: the same cells' report is not made again.)"""
        cells, made = self._report
        if cells == self._cells:
            return made
        n = min(self._cells, self._keep)
        width, times = len(STAGES), self._times
        columns = [times[index : n * width : width] for index in range(width)]  # (C slices)
        totals = sorted(self._totals[:n])
        waited = sorted(self._waited[:n])
        stages = []
        for name, column in zip(STAGES, columns, strict=True):
            if any(column):
                values = sorted(column)
                stages.append(StageCost(name, _at(values, 50) / 1e9, _at(values, 99) / 1e9))
        stages.sort(key=lambda s: (-s.median, -s.p99))
        made = CellPathCost(n, _at(totals, 50) / 1e9, _at(totals, 99) / 1e9, tuple(stages))
        if waited != totals:  # (some cell's end came after its reply)
            made = dataclasses.replace(
                made, waited_median=_at(waited, 50) / 1e9, waited_p99=_at(waited, 99) / 1e9
            )
        self._report = (self._cells, made)
        return made


def _at(ordered: list[int], q: float) -> float:
    """The ``q``-th percentile of ``ordered`` (linear interpolation)."""
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
