"""A comparison worded: each :class:`Shift` as the phrase the table, the frame and the API give
(``GPU kept ×3.0 (+512 MiB)``, ``failed (error; was ok)``), and the thresholds' line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._foundation.units import format_bytes, format_seconds
from .._session.comparison import (
    FAILED,
    FASTER,
    PASSES,
    SLOWER,
    CellComparison,
    Shift,
    Thresholds,
)

_FIGURE_NAMES = {"host_peak": "host peak", "host_kept": "host kept",
                 "gpu_peak": "GPU peak", "gpu_kept": "GPU kept"}  # fmt: skip


@dataclass(frozen=True)
class CellChange(CellComparison):
    """A comparison's row as users get it: the data, and ``reasons``, its shifts worded."""

    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


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
    before, after = float(shift.before), float(shift.after)
    if shift.what in (SLOWER, FASTER):
        return f"{shift.what} {_change(before, after, _seconds)}"
    return f"{_FIGURE_NAMES[shift.what]} {_change(before, after, format_bytes)}"


def thresholds_line(t: Thresholds) -> str:
    """What is flagged, as the table's heading says it."""
    return (
        f"flagged: memory +{t.memory_ratio:.0%} and ≥ {format_bytes(t.memory_bytes)}, "
        f"time +{t.duration_ratio:.0%} and ≥ {format_seconds(t.duration_seconds)}, "
        "or a failure"
    )


def _change(before: float, after: float, fmt: Callable[..., str]) -> str:
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
