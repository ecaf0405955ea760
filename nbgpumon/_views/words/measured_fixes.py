"""What ``whatif`` measured of the fixes, as the advice and the post-mortem quote it.

"amp −12% peak, checkpointing −53% peak (measured on your step by whatif in [14])"; where nothing
was measured, how to measure it, in one line."""

from __future__ import annotations

from collections.abc import Iterable

from ..._ledger.measured_fixes import MeasuredFix

UNMEASURED = (
    "measure what each fix saves on your own step: nbgpumon.whatif(train_step, size=N) "
    "runs it under each one"
)


def measured_line(measured: Iterable[MeasuredFix], relieves: str | None = None) -> str:
    """The fixes measured (those that lower ``relieves``: None for all), each with its peak's
    change, grouped by the cell ``whatif`` ran in; "" where none was."""
    by_cell: dict[str, list[str]] = {}
    for fix in measured:
        if relieves is None or fix.relieves == relieves:
            by_cell.setdefault(fix.cell, []).append(_change(fix))
    return "; ".join(
        f"{', '.join(changes)} (measured on your step by whatif in {cell})"
        for cell, changes in by_cell.items()
    )


def _change(fix: MeasuredFix) -> str:
    if fix.change is None:
        return f"{fix.fix} still ran out of memory"
    percent = round(abs(fix.change) * 100)
    sign = "±" if percent == 0 else "−" if fix.change < 0 else "+"  # (as whatif's table says)
    return f"{fix.fix} {sign}{percent}% peak"
