"""The transient part of a cell's peak, by the cell line that allocated it. With allocation tracing
on, the recorder's history of allocs and frees is replayed back from the cell's end to the moment of
its peak.

Walking the events backward from the end, the allocated figure before each one is known (the
end's figure, less each alloc, plus each free), so the last moment it equalled the cell's exact
peak is found without any clock. The blocks live then and freed before the end are those freed
after that moment whose alloc came before it; their alloc events carry the Python stack, which
names the cell and line (``tracing.group_by_line``). A block the history does not reach back to
is said so, as is a history that does not reach back to the peak at all (its ring buffer kept
fewer events than the cell made).

Pure functions over a snapshot in the layout of ``memory_history``: ``device_traces`` is one
list of events per device, each with ``action`` ("alloc", "free_requested", "free_completed",
...), ``addr``, ``size`` and, for allocs, ``frames``. The figures must be in the events' own
units: torch's events carry the bytes each allocation asked for, not the size of the block
that served it (the allocated figure), so its replay takes torch's ``requested_bytes``.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._ledger.traced import ReplayCut, TracedAllocation
from .tracing import group_by_line


@dataclass(frozen=True, slots=True)
class PeakReplay:
    """What a cell's peak held that it freed before its end, on one device."""

    device: int  # CUDA device index
    found: tuple[TracedAllocation, ...]  # by cell line, biggest first
    cut: ReplayCut | None = None  # why there is less than the whole of it (None when whole)

    @property
    def bytes(self) -> int:
        return sum(a.bytes for a in self.found)


def replay_to_peak(
    snapshot: Mapping[str, Any],
    device: int,
    allocated_after: int,
    peak: int,
    filename_map: Mapping[str, int],
    execution_count: int | None,
    getline: Callable[[str, int], str] = linecache.getline,
) -> PeakReplay:
    """The blocks live at the cell's peak on ``device`` and freed by its end, by cell line.

    ``allocated_after`` and ``peak``: the allocator's figures of the cell's end and its exact
    peak, read just before the snapshot, in the units of the events' sizes (bytes)."""
    traces = snapshot.get("device_traces") or ()
    events: Sequence[Mapping[str, Any]] = traces[device] if device < len(traces) else ()
    if not events:
        return PeakReplay(device, (), ReplayCut(device, 0))  # (no history kept)
    frees = _free_actions(events)
    level = allocated_after
    pending: dict[int, int] = {}  # addr -> size: freed after the moment reached, alloc before
    moment = None
    for i in range(len(events) - 1, -1, -1):
        if level == peak:
            moment = i + 1  # (after event i: the peak's moment)
            break
        e = events[i]
        action, addr, size = e.get("action"), int(e.get("addr", 0)), int(e.get("size", 0))
        if action == "alloc":
            level -= size
            pending.pop(addr, None)  # allocated and freed after the moment: not live then
        elif action in frees:
            level += size
            pending[addr] = size
    else:
        moment = 0 if level == peak else None  # (at the history's first event)
    if moment is None:
        return PeakReplay(device, (), ReplayCut(device, len(events)))
    blocks: list[tuple[int, int, Sequence[Mapping[str, Any]]]] = []
    for i in range(moment - 1, -1, -1):  # each pending block's alloc, for its stack
        if not pending:
            break
        e = events[i]
        addr = int(e.get("addr", 0))
        if e.get("action") == "alloc" and addr in pending:
            blocks.append((device, pending.pop(addr), e.get("frames") or ()))
    found = group_by_line(blocks, filename_map, execution_count, getline=getline)
    if pending:
        left = TracedAllocation(sum(pending.values()), len(pending), device, None, 0, "",
                                None, None, before_history=True)  # fmt: skip
        found = sorted([*found, left], key=lambda a: -a.bytes)
    return PeakReplay(device, tuple(found))


def _free_actions(events: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Which event lowers the allocated figure: torch counts a block freed when it is asked
    to be (``free_requested``); a history without those has only ``free_completed``."""
    if any(e.get("action") == "free_requested" for e in events):
        return ("free_requested",)
    return ("free_completed", "free")
