"""A comparison worded: each :class:`Shift` as the phrase the table, the frame and the API give, and
the thresholds' line. A phrase reads ``GPU kept ×3.0 (+512 MiB)``, ``failed (error; was ok)`` or
``children: python train.py peak ≥3.0 GiB → ≥4.5 GiB``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..._foundation.clipping import clipped
from ..._foundation.wording import format_bytes, format_percent, format_seconds, sign_of
from ..._session.analysis.comparison import (
    CHILD_GONE,
    CHILD_NEW,
    CHILD_PEAK,
    FAILED,
    FASTER,
    PASSES,
    SLOWER,
    CellComparison,
    Shift,
    Thresholds,
)
from ..reprs.short import cut

if TYPE_CHECKING:
    from ..._ledger.records import ChildUsage  # (a record's; views don't import sources)

MAX_COMMAND = 40  # characters of a child's command in a reason
_FIGURE_NAMES = {"host_peak": "host peak", "host_kept": "host kept",
                 "gpu_peak": "GPU peak", "gpu_kept": "GPU kept"}  # fmt: skip


@dataclass(frozen=True)
class CellChange(CellComparison):
    """A comparison's row as users get it: the data, and ``reasons``, its shifts worded."""

    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def __repr__(self) -> str:
        # one line, however long its cells' sources: ``.pair`` has the records, ``.a``/``.b``
        # their figures
        said = ": ".join(x for x in (self.verdict, self.reason) if x)
        said = f", {cut(said)}" if said else ""
        return f"<CellChange {self.name} {self.pair.how}{said} | {cut(self.label, 60)}>"


def worded(changes: Sequence[CellComparison]) -> list[CellChange]:
    """Each row with its reasons in words."""
    return [
        CellChange(c.pair, c.a, c.b, c.verdict, c.shifts, tuple(map(shift_text, c.shifts)))
        for c in changes
    ]


def shift_text(shift: Shift) -> str:
    """One reason in words: ``failed (error; was ok)``, ``host kept ×3.0 (+200 MiB)``,
    ``slower +25% (+1.2 s)``."""
    if shift.what == FAILED:
        return f"failed ({shift.after}; was {shift.before})"
    if shift.what == PASSES:
        return f"passes (was {shift.before})"
    if shift.what in (CHILD_PEAK, CHILD_NEW, CHILD_GONE):
        return _child_text(shift)
    before, after = float(shift.before), float(shift.after)
    if shift.what in (SLOWER, FASTER):
        return f"{shift.what} {_change(before, after, _seconds)}"
    return f"{_FIGURE_NAMES[shift.what]} {_change(before, after, format_bytes)}"


def _child_text(shift: Shift) -> str:
    """``children: python train.py peak ≥3.0 GiB → ≥4.5 GiB``, ``children: python eval.py
    (rank 1) new, peak 2.0 GiB``, ``children: python old.py gone (peak was ≥1.0 GiB)``; ``≥``
    where the peak is the highest sampled figure, a lower bound."""
    one, two = shift.children
    child = two if two is not None else one
    name = _command(child) if child is not None else "a process"
    if shift.what == CHILD_NEW:
        return f"children: {name} new, peak {_peak(two)}"
    if shift.what == CHILD_GONE:
        return f"children: {name} gone (peak was {_peak(one)})"
    return f"children: {name} peak {_peak(one)} → {_peak(two)}"


def _command(child: ChildUsage) -> str:
    command = clipped(child.command, MAX_COMMAND)
    return command if child.rank is None else f"{command} (rank {child.rank})"


def _peak(child: ChildUsage | None) -> str:
    if child is None:
        return "—"
    return ("" if child.exact else "≥") + format_bytes(child.peak)


def thresholds_line(t: Thresholds) -> str:
    """What is flagged, as the table's heading says it."""
    return (
        f"flagged: memory +{t.memory_ratio:.0%} and ≥ {format_bytes(t.memory_bytes)}, "
        f"time +{t.duration_ratio:.0%} and ≥ {format_seconds(t.duration_seconds)}, "
        "or a failure"
    )


def _change(before: float, after: float, fmt: Callable[..., str]) -> str:
    """``×3.0 (+200 MiB)``, ``+25% (+1.2 GiB)``, ``−40% (−2.0 s)``; from nothing: ``+64 MiB``."""
    delta = fmt(after - before, signed=True)
    if before <= 0:
        return f"{delta} (was {fmt(before)})"
    if after >= 2 * before:
        return f"×{after / before:.1f} ({delta})"
    return f"{format_percent((after - before) / before * 100, signed=True)} ({delta})"


def _seconds(s: float, signed: bool = False) -> str:
    return sign_of(s, signed) + format_seconds(abs(s))
