"""Allocations as lines: what a cell left alive, by the cell and line that allocated it (the
trace lines under a cell; its record keeps the allocations), what its peak held and it freed,
and the post-mortem's largest live blocks."""

from __future__ import annotations

from ..._foundation.wording import counted, format_bytes
from ..._ledger.traced import ReplayCut, TracedAllocation, TracedItem


def traced_line(item: TracedItem) -> str:
    """One item of a record's ``traced`` or ``traced_peak`` as its line: an allocation as
    :func:`format_traced` writes it, a replay that stopped short in parentheses, and a line of a
    recording older than schema 7 (text then) as it is."""
    if isinstance(item, TracedAllocation):
        return format_traced(item)
    if isinstance(item, ReplayCut):
        return f"({replay_cut(item)})"
    return item


def replay_cut(cut: ReplayCut) -> str:
    """Why the replay of a cell's peak named less than all it held."""
    if not cut.events:
        return "the recorder kept no history of allocations"
    kept = counted(cut.events, "event")
    return f"the recorder's history ({kept}) does not reach back to the peak"


def format_traced(a: TracedAllocation) -> str:
    """``[7] line 3: y = torch.empty(…) — 1.0 GiB``; a caller in another cell comes first:
    ``[7] line 2 → [3] line 5: ... — 1.0 GiB``."""
    cell = "?" if a.cell is None else a.cell
    if a.line:
        where = f"[{cell}] line {a.line}"
        if a.caller_cell is not None:
            where = f"[{a.caller_cell}] line {a.caller_line} → {where}"
        text = f"{where}: {a.source}" if a.source else where
    else:  # allocated while the cell ran, but no cell frame on its stack
        text = (
            f"[{cell}] no cell line ({a.source or 'no Python stack: autograd or another thread'})"
        )
    return f"{text} — {_size(a)}"


def format_live(a: TracedAllocation) -> str:
    """One group of live blocks, as the trace lines write it; blocks without a Python stack
    were allocated before tracing began, or by autograd or another thread."""
    if not a.line and not a.source:
        return (
            "no Python stack (allocated before tracing began, by autograd or by another "
            f"thread) — {_size(a)}"
        )
    return format_traced(a)


def _size(a: TracedAllocation) -> str:
    size = format_bytes(a.bytes)
    if a.blocks > 1:
        size += f" in {a.blocks} blocks"
    if a.device:
        size += f" on cuda:{a.device}"
    return size
