"""``whatif``'s table in words: each fix, whether it ran, its peak on the step's GPU and its time,
each against the step as it is."""

from __future__ import annotations

from ..._foundation.wording import format_bytes, format_seconds
from ..._session.analysis.whatif import TrialRow, WhatifRun

HEADS = ("fix", "peak", "vs baseline", "time", "vs baseline", "")
# what each run's peak is made of: its activations (the part freed by the run's end), what the
# model held at the end, and the allocator's reserved high-water mark
KIND_HEADS = (
    "fix", "activations", "vs baseline", "optimizer state", "gradients", "reserved peak",
    "vs baseline",
)  # fmt: skip
KINDS_SAY = (
    "activations: the part of the peak freed by the run's end (activations and temporaries); "
    "optimizer state and gradients as the run left them; reserved peak: the most the "
    "allocator held from the device (its cache and fragmentation above the peak)"
)


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


def kind_rows(run: WhatifRun) -> list[tuple[str, ...]]:
    """The second table's cells, a tuple per run that ran (the baseline first); none where the
    step runs on no GPU or no run has a figure to show."""
    if run.cuda_index is None:
        return []
    ran = [row for row in (run.baseline, *run.rows) if row.applied]
    figures = ("activations", "optimizer_state", "gradients", "reserved_peak")
    if not any(getattr(row, f) is not None for row in ran for f in figures):
        return []
    base = run.baseline
    return [
        (
            row.fix,
            _bytes(row.activations),
            "" if row is base else change(row.activations, base.activations),
            _bytes(row.optimizer_state),
            _bytes(row.gradients),
            _bytes(row.reserved_peak),
            "" if row is base else change(row.reserved_peak, base.reserved_peak),
        )
        for row in ran
    ]


def _bytes(value: int | None) -> str:
    return "—" if value is None else format_bytes(value)


def peak_text(peak: int | None, exact: bool) -> str:
    if peak is None or exact:
        return _bytes(peak)
    return f"≥ {format_bytes(peak)}"


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
    compiled = (
        "; compiled: a fix that changes .training or the dtypes recompiles it, in the "
        "unmeasured run before each measured one"
        if run.compiled
        else ""
    )
    return (
        f"nbgpumon.whatif: {run.label}{size} on {model}, peak allocated on {where}{copy}{compiled}"
    )


def whatif_text(run: WhatifRun) -> str:
    """The heading and the table, in columns; then what each run's peak is made of."""
    lines = [whatif_heading(run), *_columns([HEADS, *whatif_rows(run)], note_last=True)]
    kinds = kind_rows(run)
    if kinds:
        lines += ["", "what each run's peak is made of:"]
        lines += _columns([KIND_HEADS, *kinds], note_last=False)
        lines.append("  " + KINDS_SAY)
    return "\n".join(lines)


def _columns(rows: list[tuple[str, ...]], note_last: bool) -> list[str]:
    """``rows`` as aligned lines: the first column left, the others right; ``note_last``: the
    last cell free text after them."""
    width = len(rows[0]) - (1 if note_last else 0)
    widths = [max(len(row[i]) for row in rows) for i in range(width)]
    out = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, width)]
        note = row[-1] if note_last and row[-1] else ""
        out.append(("  " + "  ".join(cells) + ("  " + note if note else "")).rstrip())
    return out
