"""A record's traced allocations as data: what a cell left alive, or what its peak held and it
freed, by the notebook line that allocated it; and why a replay of its peak is not whole. The
views word them when shown (``_views/words/traced.py``); a recording keeps them as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TracedAllocation:
    """Blocks that one notebook line allocated during one cell, grouped."""

    bytes: int  # total bytes of the blocks in this group
    blocks: int  # how many blocks
    device: int  # CUDA device index
    cell: int | None  # execution count N of In[N] of the innermost notebook-cell frame
    line: int  # line number within that cell (0: no notebook-cell frame on the stack)
    source: str  # that line's source text, stripped and cut to ~80 chars ("" if unknown)
    caller_cell: int | None  # outermost notebook-cell frame's count when it differs from cell
    caller_line: int | None
    # a replay's blocks whose alloc came before the recorder's kept history (no line known)
    before_history: bool = False


@dataclass(frozen=True, slots=True)
class ReplayCut:
    """The replay of a cell's peak on one device stopped short: the recorder's history of
    allocations (``events`` long; 0: none kept) does not reach back to the peak."""

    device: int  # CUDA device index
    events: int


# An item of ``CellRecord.traced`` (allocations) or ``traced_peak`` (allocations, each device's
# cut after its own). A str is a line of a recording made before they were data (schema < 7).
TracedItem = TracedAllocation | ReplayCut | str


def traced_as_json(items: Iterable[TracedItem]) -> list[Any]:
    """``items`` as JSON-ready values: a dict per allocation or cut, an old line as it is."""
    return [item if isinstance(item, str) else asdict(item) for item in items]


def traced_from_json(items: Iterable[Any]) -> tuple[TracedItem, ...]:
    """The inverse of :func:`traced_as_json`: a dict with ``bytes`` is an allocation, one with
    ``events`` a cut; a string (an older recording's line) stays as it is."""
    found: list[TracedItem] = []
    for item in items:
        if isinstance(item, dict):
            found.append(TracedAllocation(**item) if "bytes" in item else ReplayCut(**item))
        else:
            found.append(str(item))
    return tuple(found)
