"""Two runs side by side: per matched cell what changed (time, host and GPU memory, per
framework, utilization, the processes it started) and whether that is a regression. Plain
data (each reason a :class:`Shift`); the views word it: the table, the frame and the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..._ledger.matching import ONLY_IN_A, ONLY_IN_B, Pair
from ..._ledger.records import AllocatorUsage, CellRecord, DeviceUsage
from ..._sources.processes.children import ChildUsage

MIB = 2**20
REGRESSION, IMPROVED = "regression", "improved"


@dataclass(frozen=True)
class Thresholds:
    """How much worse a cell must get to be flagged: both the share and the amount."""

    memory_ratio: float = 0.10  # peak or kept, host or GPU: 10% more ...
    memory_bytes: int = 64 * MIB  # ... and at least 64 MiB more
    duration_ratio: float = 0.25  # 25% slower ...
    duration_seconds: float = 1.0  # ... and at least 1 s slower


@dataclass(frozen=True)
class Figures:
    """One run of a cell, as the comparison reads it. Bytes and seconds; None: not measured."""

    duration: float
    status: str
    host_peak: int | None  # resident memory's rise over the cell (rss_peak - rss_before)
    host_kept: int | None  # what resident memory grew by, never negative
    gpu_peak: int | None  # allocator peak over the start, summed over GPUs
    gpu_kept: int | None  # allocator bytes left behind, summed over GPUs
    util: float | None  # mean GPU utilization over the cell, percent
    frameworks: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    # framework → (peak, kept) over its GPUs
    children: tuple[ChildUsage, ...] = ()  # the processes it started that used a GPU

    @classmethod
    def of(cls, r: CellRecord) -> Figures:
        frameworks = {
            name: (_sum(_peak(u) for u in r.framework_usage(name)), _sum_kept(r, name))
            for name in r.frameworks
        }
        return cls(
            duration=r.duration,
            status=r.status,
            host_peak=_rise(r.rss_before, r.rss_peak),
            host_kept=_rise(r.rss_before, r.rss_after),
            gpu_peak=_sum(_peak(d) for d in r.devices),
            gpu_kept=r.retained,
            util=r.util_mean,
            frameworks=frameworks,
            children=r.children,
        )


def _rise(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else max(0, after - before)


def _peak(u: DeviceUsage | AllocatorUsage) -> int | None:
    return _rise(u.allocated_before, u.peak_allocated)


def _sum(values) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _sum_kept(r: CellRecord, framework: str) -> int | None:
    return _sum(u.retained for u in r.framework_usage(framework))


# What a Shift is about: the status, a memory figure (a Figures field), or the time; or a
# child: its peak GPU memory changed, or it is new in B, or gone from it.
FAILED, PASSES = "failed", "passes"
SLOWER, FASTER = "slower", "faster"
CHILD_PEAK, CHILD_NEW, CHILD_GONE = "child_peak", "child_new", "child_gone"


@dataclass(frozen=True)
class Shift:
    """One reason for a verdict: what moved (FAILED, PASSES, a memory figure such as ``"gpu_kept"``,
    SLOWER or FASTER) from ``before`` (run A) to ``after`` (run B). Those are bytes, seconds, or for
    FAILED and PASSES the statuses. A child's shift (CHILD_PEAK, CHILD_NEW, CHILD_GONE) is about its
    peak GPU memory, 0 in the run it is not in, and ``children`` holds it as each run has it (None:
    not in that run)."""

    what: str
    before: float | str
    after: float | str
    children: tuple[ChildUsage | None, ChildUsage | None] = (None, None)


@dataclass(frozen=True)
class CellComparison:
    """One row of a comparison: a pair of cells (or a cell of one run), their figures and
    the verdict (``"regression"``, ``"improved"`` or ``""``) with the shifts behind it."""

    pair: Pair
    a: Figures | None
    b: Figures | None
    verdict: str
    shifts: tuple[Shift, ...]

    @property
    def name(self) -> str:
        """The pair's name, ``[3] → [4]``, or ``[3] → —`` for a cell only in A."""
        one = self.pair.a.name if self.pair.a is not None else "—"
        two = self.pair.b.name if self.pair.b is not None else "—"
        return one if one == two else f"{one} → {two}"

    @property
    def label(self) -> str:
        record = self.pair.b if self.pair.b is not None else self.pair.a
        return record.label if record is not None else ""


def compare_pairs(pairs: Sequence[Pair], thresholds: Thresholds) -> list[CellComparison]:
    """Each pair's figures and verdict."""
    out = []
    for pair in pairs:
        a = Figures.of(pair.a) if pair.a is not None else None
        b = Figures.of(pair.b) if pair.b is not None else None
        verdict, shifts = _verdict(a, b, thresholds) if a and b else ("", ())
        out.append(CellComparison(pair, a, b, verdict, shifts))
    return out


def frameworks_of(changes: Sequence[CellComparison]) -> list[str]:
    """The frameworks measured in either run, in first-seen order."""
    names = (n for c in changes for f in (c.a, c.b) if f is not None for n in f.frameworks)
    return list(dict.fromkeys(names))


# -- the verdict ------------------------------------------------------------------------------
MEMORY_FIGURES = ("host_peak", "host_kept", "gpu_peak", "gpu_kept")


def _verdict(a: Figures, b: Figures, t: Thresholds) -> tuple[str, tuple[Shift, ...]]:
    worse: list[Shift] = []
    better: list[Shift] = []
    if a.status == "ok" and b.status != "ok":
        worse.append(Shift(FAILED, a.status, b.status))
    elif a.status != "ok" and b.status == "ok":
        better.append(Shift(PASSES, a.status, b.status))
    for name in MEMORY_FIGURES:
        one, two = getattr(a, name), getattr(b, name)
        if one is None or two is None:
            continue
        if _past(one, two, t.memory_ratio, t.memory_bytes):
            worse.append(Shift(name, one, two))
        elif _past(two, one, t.memory_ratio, t.memory_bytes):
            better.append(Shift(name, one, two))
    # a cell that failed stopped early: its time says nothing about speed
    if a.status == b.status == "ok":
        if _past(a.duration, b.duration, t.duration_ratio, t.duration_seconds):
            worse.append(Shift(SLOWER, a.duration, b.duration))
        elif _past(b.duration, a.duration, t.duration_ratio, t.duration_seconds):
            better.append(Shift(FASTER, a.duration, b.duration))
    grown, shrunk, said = _children_shifts(a.children, b.children, t)
    # a child's shift is said whatever the verdict; one past the thresholds also makes it
    if worse or grown:
        return REGRESSION, (*worse, *said)
    if better or shrunk:
        return IMPROVED, (*better, *said)
    return "", tuple(said)


def _children_shifts(
    a: Sequence[ChildUsage], b: Sequence[ChildUsage], t: Thresholds
) -> tuple[bool, bool, list[Shift]]:
    """The children's shifts, in order (a matched child whose peak moved past the memory
    thresholds; one only in A or only in B, whatever its peak), and whether one grew or
    shrank past them (a new child's peak counts as growth from nothing, a gone one's as the
    opposite)."""
    grown = shrunk = False
    said = []
    for one, two in match_children(a, b):
        before = one.peak if one is not None else 0
        after = two.peak if two is not None else 0
        up = _past(before, after, t.memory_ratio, t.memory_bytes)
        down = _past(after, before, t.memory_ratio, t.memory_bytes)
        if one is None:
            what = CHILD_NEW
        elif two is None:
            what = CHILD_GONE
        elif up or down:
            what = CHILD_PEAK
        else:
            continue  # (a peak that moved less than the thresholds: the same)
        said.append(Shift(what, before, after, (one, two)))
        grown, shrunk = grown or up, shrunk or down
    return grown, shrunk, said


def match_children(
    a: Sequence[ChildUsage], b: Sequence[ChildUsage]
) -> list[tuple[ChildUsage | None, ChildUsage | None]]:
    """A cell's children in run A paired with B's: by command (and rank, for a job's
    workers), then in order of start; (child, None) for one only in A, (None, child) for one
    only in B. A's order, then B's new ones."""
    in_a, in_b = _by_command(a), _by_command(b)
    pairs: list[tuple[ChildUsage | None, ChildUsage | None]] = []
    for key in dict.fromkeys([*in_a, *in_b]):
        ones, twos = in_a.get(key, []), in_b.get(key, [])
        for k in range(max(len(ones), len(twos))):
            pairs.append((ones[k] if k < len(ones) else None, twos[k] if k < len(twos) else None))
    return pairs


def _past(before: float, after: float, ratio: float, amount: float) -> bool:
    """``after`` is more than ``before`` by at least ``amount`` and by more than ``ratio``."""
    grown = after - before
    return grown >= amount and grown > ratio * before


def only_in(changes: Sequence[CellComparison], side: str) -> list[CellRecord]:
    """The records of the cells only in run ``side`` ("A" or "B")."""
    how = ONLY_IN_A if side == "A" else ONLY_IN_B
    records = [c.pair.a if side == "A" else c.pair.b for c in changes if c.pair.how == how]
    return [r for r in records if r is not None]


def _by_command(children: Sequence[ChildUsage]) -> dict[tuple[str, int | None], list[ChildUsage]]:
    """{(command, rank): the children that ran it, in order of start}."""
    out: dict[tuple[str, int | None], list[ChildUsage]] = {}
    for child in sorted(children, key=lambda c: c.started):
        out.setdefault((child.command, child.rank), []).append(child)
    return out
