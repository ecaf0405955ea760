"""``whatif``'s table in words: each fix, whether it ran, its peak on the step's GPU and its time,
each against the step as it is."""

from __future__ import annotations

from ..._foundation.wording import format_bytes, format_seconds
from ..._session.analysis.whatif import TrialRow, WhatifRun

HEADS = ("fix", "peak", "vs baseline", "time", "vs baseline", "")


def whatif_rows(run: WhatifRun) -> list[tuple[str, ...]]:
    """The table's cells, a tuple per run: the baseline first."""
    rows = [_cells(run.baseline, None)]
    rows += [_cells(row, run.baseline) for row in run.rows]
    return rows


def _cells(row: TrialRow, baseline: TrialRow | None) -> tuple[str, ...]:
    if not row.applied:
        return (row.fix, "—", "", "—", "", f"not applied: {row.note}")
    peak = peak_text(row.peak, row.exact)
    time = format_seconds(row.seconds) if row.seconds is not None else "—"
    if baseline is None:
        return (row.fix, peak, "", time, "", row.note)
    return (
        row.fix,
        peak,
        change(row.peak, baseline.peak),
        time,
        change(row.seconds, baseline.seconds),
        row.note,
    )


def peak_text(peak: int | None, exact: bool) -> str:
    if peak is None:
        return "—"
    return format_bytes(peak) if exact else f"≥ {format_bytes(peak)}"


def change(value: float | None, base: float | None) -> str:
    """``value`` against ``base`` as a signed percentage ("−38%"); "" where either is unknown."""
    if value is None or base is None or base <= 0:
        return ""
    percent = (value - base) / base * 100
    if abs(percent) < 0.5:
        return "±0%"
    return f"{'+' if percent > 0 else '−'}{abs(percent):.0f}%"


def whatif_heading(run: WhatifRun) -> str:
    """The line above the table: the step, its model, the GPU, the host copy."""
    model = f"{run.model_name} ({run.model_type})" if run.model_name else run.model_type
    where = (
        f"cuda:{run.cuda_index}"
        if run.cuda_index is not None
        else "no GPU: the model is not on one"
    )
    size = f", size {run.size}" if run.size is not None else ""
    if run.state_bytes is not None:
        copy = f"; its state ({format_bytes(run.state_bytes)}) put back after each run"
    else:
        copy = "; its state not copied (restore=False): the runs changed it"
    return f"nbgpumon.whatif: {run.label}{size} on {model}, peak allocated on {where}{copy}"


def whatif_text(run: WhatifRun) -> str:
    """The heading and the table, in columns."""
    rows = [HEADS, *whatif_rows(run)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADS) - 1)]
    lines = [whatif_heading(run)]
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [row[i].rjust(widths[i]) for i in range(1, len(HEADS) - 1)]
        lines.append(("  " + "  ".join(cells) + ("  " + row[-1] if row[-1] else "")).rstrip())
    return "\n".join(lines)
