"""Allocations as lines. They say what a cell left alive, by the cell and line that allocated it
(the trace lines under a cell; its record keeps the allocations), what its peak held and it freed,
and the post-mortem's largest live blocks. Also what turning allocation tracing on or off did, and
its state (``mon.trace()``, ``mon.tracing``, ``%gpumon status``)."""

from __future__ import annotations

from ..._forensics import tracing_answer as tracing
from ..._forensics.tracing_answer import TracingAnswer, TracingState
from ..._foundation.wording import counted, format_bytes
from ..._ledger.traced import ReplayCut, TracedAllocation, TracedItem

BEFORE_HISTORY = "allocated before the recorder's kept history"
NO_STACK = "no Python stack: autograd or another thread"


def traced_line(item: TracedItem) -> str:
    """One item of a record's ``traced`` or ``traced_peak`` as its line. An allocation reads as
    :func:`format_traced` writes it, a replay that stopped short is in parentheses, and a line of a
    recording older than schema 7 (text then) stays as it is."""
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
    """An allocation as a line, ``[7] line 3: y = torch.empty(…) — 1.0 GiB``; a caller in another
    cell comes first: ``[7] line 2 → [3] line 5: ... — 1.0 GiB``."""
    cell = "?" if a.cell is None else a.cell
    if a.line:
        where = f"[{cell}] line {a.line}"
        if a.caller_cell is not None:
            where = f"[{a.caller_cell}] line {a.caller_line} → {where}"
        text = f"{where}: {a.source}" if a.source else where
    else:  # allocated while the cell ran, but no cell frame on its stack
        why = a.source or (BEFORE_HISTORY if a.before_history else NO_STACK)
        text = f"[{cell}] no cell line ({why})"
    return f"{text} — {_size(a)}"


def format_live(a: TracedAllocation) -> str:
    """One group of live blocks, as the trace lines write it; blocks without a Python stack
    were allocated before tracing began, or by autograd or another thread."""
    if not a.line and not a.source and not a.before_history:
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


def tracing_line(answer: TracingAnswer) -> str:
    """What turning allocation tracing on or off did, in one line."""
    whose = f"{answer.recorder}'s"
    if answer.outcome == tracing.STARTED:
        using = f" ({whose} recorder was already on; using it)" if answer.theirs else ""
        return (
            "allocation tracing on: after each cell, the memory it left behind is shown by cell "
            f"and line{using}"
        )
    if answer.outcome == tracing.WAITING:
        return (
            f"allocation tracing armed: it starts at the first cell after {answer.recorder} "
            "initialises CUDA (allocations before that are not traced)"
        )
    if answer.outcome == tracing.ALREADY_ON:
        return "allocation tracing is already on"
    if answer.outcome == tracing.REFUSED:
        return f"allocation tracing not possible: {answer.problem}"
    if answer.outcome == tracing.STOPPED:
        left = f" ({whose} recorder was on before; left on)" if answer.theirs else ""
        return f"allocation tracing off{left}"
    if answer.outcome == tracing.STOP_FAILED:
        return f"allocation tracing off, but {answer.problem}"
    return "allocation tracing was not on"


def tracing_state_words(state: TracingState) -> str:
    """ "on", "armed" (waiting for CUDA) or "off", and the last problem in parentheses."""
    return f"{state.phase} ({state.problem})" if state.problem else state.phase
