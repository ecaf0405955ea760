"""What is printed under a cell, from its outcome (``_session/cell_pipeline.py``). In order: a
plug-in's notice, a record lost after the last cell's reply, the summary line, the NVTX problem,
the traced lines, the post-mortem, the recorder's."""

from __future__ import annotations

from .._foundation.wording import counted
from .._session.cell_pipeline import CellOutcome
from .status.recorder import notice_line
from .words.cell_summary import summary_line
from .words.traced import traced_line

TRACE_LINES = 5  # traced lines printed under a cell (the record keeps them all)
PEAK_LINES = 3  # and of what its peak held and it freed


def cell_lines(outcome: CellOutcome, summary: bool) -> list[str]:
    """The lines to print under the cell, in order (none for a quiet cell); ``summary``:
    GPUMon.summary."""
    lines = [f"nbgpumon: {outcome.reset_notice}"] if outcome.reset_notice else []
    if outcome.lost:
        lines.append(f"nbgpumon: {outcome.lost}")
    if summary:
        lines.append(summary_line(outcome.record))
    if outcome.range_error:
        lines.append(f"nbgpumon: {outcome.range_error}")
    if outcome.oom is None or not outcome.oom.largest:  # (else the post-mortem lists them)
        lines += trace_lines(outcome)
    if outcome.oom is not None:
        from .memory.oom import report  # (the holder walk's types: only after an OOM)

        lines.append(report(outcome.oom, outcome.measured))
    return lines + [f"nbgpumon: {notice_line(n)}" for n in outcome.notices]


def trace_lines(outcome: CellOutcome) -> list[str]:
    """The first TRACE_LINES of what the cell left alive, by line, and how many more."""
    traced = outcome.record.traced  # (the record keeps the allocations: worded here)
    lines = [f"nbgpumon trace: {traced_line(item)}" for item in traced[:TRACE_LINES]]
    if len(traced) > TRACE_LINES:
        lines.append(f"nbgpumon trace: … {counted(len(traced) - TRACE_LINES, 'more line')}")
    peak = outcome.record.traced_peak
    said = "nbgpumon trace, freed after its peak: "
    lines += [said + traced_line(item) for item in peak[:PEAK_LINES]]
    if len(peak) > PEAK_LINES:
        more = counted(len(peak) - PEAK_LINES, "more line")
        lines.append(
            f"{said}… {more} (%gpumon explain {outcome.record.execution_count} lists them)"
        )
    return lines
