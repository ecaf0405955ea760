"""Two runs side by side: per matched cell what changed (time, host and GPU memory, per
framework, utilization) and whether that is a regression. Plain data; the table, the frame
and the report render it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .._foundation.units import format_bytes, format_seconds
from .._ledger.matching import ONLY_IN_A, ONLY_IN_B, Pair
from .._ledger.records import AllocatorUsage, CellRecord, DeviceUsage

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


@dataclass(frozen=True)
class CellChange:
    """One row of a comparison: a pair of cells (or a cell of one run), their figures and
    the verdict (``"regression"``, ``"improved"`` or ``""``) with its reasons."""

    pair: Pair
    a: Figures | None
    b: Figures | None
    verdict: str
    reasons: tuple[str, ...]

    @property
    def name(self) -> str:
        """``[3] → [4]``, ``[3] → —`` for a cell only in A."""
        one = self.pair.a.name if self.pair.a is not None else "—"
        two = self.pair.b.name if self.pair.b is not None else "—"
        return one if one == two else f"{one} → {two}"

    @property
    def label(self) -> str:
        record = self.pair.b if self.pair.b is not None else self.pair.a
        return record.label if record is not None else ""

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def compare_pairs(pairs: Sequence[Pair], thresholds: Thresholds) -> list[CellChange]:
    """Each pair's figures and verdict."""
    out = []
    for pair in pairs:
        a = Figures.of(pair.a) if pair.a is not None else None
        b = Figures.of(pair.b) if pair.b is not None else None
        verdict, reasons = _verdict(a, b, thresholds) if a and b else ("", ())
        out.append(CellChange(pair, a, b, verdict, reasons))
    return out


def frameworks_of(changes: Sequence[CellChange]) -> list[str]:
    """The frameworks measured in either run, in first-seen order."""
    names = (n for c in changes for f in (c.a, c.b) if f is not None for n in f.frameworks)
    return list(dict.fromkeys(names))


# -- the verdict ------------------------------------------------------------------------------
_MEMORY = (("host_peak", "host peak"), ("host_kept", "host kept"),
           ("gpu_peak", "GPU peak"), ("gpu_kept", "GPU kept"))  # fmt: skip


def _verdict(a: Figures, b: Figures, t: Thresholds) -> tuple[str, tuple[str, ...]]:
    worse: list[str] = []
    better: list[str] = []
    if a.status == "ok" and b.status != "ok":
        worse.append(f"failed ({b.status}; was ok)")
    elif a.status != "ok" and b.status == "ok":
        better.append(f"passes (was {a.status})")
    for attr, name in _MEMORY:
        one, two = getattr(a, attr), getattr(b, attr)
        if one is None or two is None:
            continue
        if _past(one, two, t.memory_ratio, t.memory_bytes):
            worse.append(f"{name} {_change(one, two, format_bytes)}")
        elif _past(two, one, t.memory_ratio, t.memory_bytes):
            better.append(f"{name} {_change(one, two, format_bytes)}")
    # a cell that failed stopped early: its time says nothing about speed
    if a.status == b.status == "ok":
        if _past(a.duration, b.duration, t.duration_ratio, t.duration_seconds):
            worse.append(f"slower {_change(a.duration, b.duration, _seconds)}")
        elif _past(b.duration, a.duration, t.duration_ratio, t.duration_seconds):
            better.append(f"faster {_change(a.duration, b.duration, _seconds)}")
    if worse:
        return REGRESSION, tuple(worse)
    return (IMPROVED, tuple(better)) if better else ("", ())


def _past(before: float, after: float, ratio: float, amount: float) -> bool:
    """``after`` is more than ``before`` by at least ``amount`` and by more than ``ratio``."""
    grown = after - before
    return grown >= amount and grown > ratio * before


def _change(before: float, after: float, fmt) -> str:
    """``×3.0 (+200 MiB)``, ``+25% (+1.2 GiB)``, ``-40% (-2.0 s)``; from nothing: ``+64 MiB``."""
    delta = fmt(after - before, signed=True)
    if before <= 0:
        return f"{delta} (was {fmt(before)})"
    if after >= 2 * before:
        return f"×{after / before:.1f} ({delta})"
    return f"{(after - before) / before * 100:+.0f}% ({delta})"


def _seconds(s: float, signed: bool = False) -> str:
    text = format_seconds(abs(s))
    return ("-" if s < 0 else "+" if signed and s > 0 else "") + text


def only_in(changes: Sequence[CellChange], side: str) -> list[CellRecord]:
    """The records of the cells only in run ``side`` ("A" or "B")."""
    how = ONLY_IN_A if side == "A" else ONLY_IN_B
    records = [c.pair.a if side == "A" else c.pair.b for c in changes if c.pair.how == how]
    return [r for r in records if r is not None]


# -- one flat row per change (the DataFrame's) ------------------------------------------------
_FIGURES = ("duration", "host_peak", "host_kept", "gpu_peak", "gpu_kept", "util")


def change_row(change: CellChange, frameworks: Sequence[str]) -> dict[str, object]:
    """``change`` as the comparison frame's row: see the README's "Comparing two runs"."""
    a, b, pair = change.a, change.b, change.pair
    row: dict[str, object] = {
        "kind": pair.kind,
        "cell_a": pair.a.name if pair.a is not None else None,
        "cell_b": pair.b.name if pair.b is not None else None,
        "index_a": pair.a.index if pair.a is not None else None,
        "index_b": pair.b.index if pair.b is not None else None,
        "label": change.label,
        "match": pair.how,
        "similarity": pair.similarity,
        "status_a": a.status if a else None,
        "status_b": b.status if b else None,
    }
    for name in _FIGURES:
        _put(row, name, getattr(a, name) if a else None, getattr(b, name) if b else None)
    for fw in frameworks:
        for k, what in enumerate(("peak", "kept")):
            one = a.frameworks.get(fw, (None, None))[k] if a else None
            two = b.frameworks.get(fw, (None, None))[k] if b else None
            _put(row, f"{fw}_{what}", one, two)
    row["verdict"] = change.verdict
    row["reason"] = change.reason
    return row


def _put(row: dict[str, object], name: str, one, two) -> None:
    row[f"{name}_a"], row[f"{name}_b"] = one, two
    row[f"{name}_change"] = None if one is None or two is None else two - one
