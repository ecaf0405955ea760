"""A recording cut short, in words (``nbgpumon.load``'s warning, its repr, its status line):
how it is cut short and what could not be read, from ``_recording/salvage.py``'s facts."""

from __future__ import annotations

from ..._foundation.wording import format_utc
from ..._recording.salvage import Damage, Lost


def damage_line(damage: Damage) -> str:
    """A recording cut short, as one line: ``run.sqlite: the file is cut short: …; samples
    after 2026-12-01 12:03:05 UTC and the cells after the first 4 could not be read``."""
    lost = lost_words(damage.lost)
    read = f"{lost} could not be read" if lost else f"session {damage.session_id} was read in full"
    return f"{damage.path}: {damage.cut_short}; {read}"


def lost_words(lost: Lost) -> str:
    """What a partial read lost, as a phrase ("" for nothing): "samples after 2026-12-01
    12:03:05 UTC and the cells after the first 4"."""
    parts = []
    if lost.samples_cut:
        last = lost.last_sample
        parts.append("all samples" if last is None else f"samples after {format_utc(last)}")
    if lost.cells_cut:
        parts.append(
            f"the cells after the first {lost.cells_read}" if lost.cells_read else "all cells"
        )
    elif lost.cells_unreadable:
        n = lost.cells_unreadable
        parts.append(f"{n} cell{'s' if n > 1 else ''}")
    if lost.children_cut:
        parts.append("some cells' children")
    if lost.marks_cut:
        parts.append(
            f"the marks after the first {lost.marks_read}" if lost.marks_read else "all marks"
        )
    if len(parts) < 2:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} and {parts[-1]}"
