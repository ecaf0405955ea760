"""Text that stays short however much there is behind it. It is what a repr shows when a cell ends
with one of nbgpumon's objects (a recording, a comparison, a scan), at most ``REPR_LIMIT``
characters whatever the size of the data."""

from __future__ import annotations

from collections.abc import Sequence

from ..._foundation.clipping import clipped
from ..._foundation.wording import counted

REPR_LIMIT = 2000  # characters of a repr
LINE_LIMIT = 200  # characters of one line of it (a long path, a cell's long first line)


def cut(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` on one line and at most ``limit`` characters, ending "…" where it was cut."""
    return clipped(" ".join(text.split("\n")), limit)


def cut_middle(text: str, limit: int = LINE_LIMIT // 2) -> str:
    """``text`` at most ``limit`` characters, its start and end kept (a long path: where it
    is, and the file's name)."""
    if len(text) <= limit:
        return text
    end = limit * 2 // 3
    return text[: limit - end - 1] + "…" + text[-end:]


def short_text(lines: Sequence[str], rest: str, limit: int = REPR_LIMIT) -> str:
    """``lines`` (each cut to ``LINE_LIMIT``), as many as fit in ``limit`` characters, then
    ``… 12 more lines: {rest}`` when some are left out (``rest`` says where to see them)."""
    shown = [cut(line) for line in lines]
    if len("\n".join(shown)) <= limit:
        return "\n".join(shown)
    tail = cut(f"… {counted(len(shown), 'more line')}: {rest}")  # its longest
    kept: list[str] = []
    used = len(tail)
    for line in shown:
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, cut(f"… {counted(len(shown) - len(kept), 'more line')}: {rest}")])


def short_list(items: Sequence[object], limit: int = REPR_LIMIT) -> str:
    """A list's repr that stays short: its items' reprs (each cut to a line), as many as fit,
    then how many more."""
    if not items:
        return "[]"
    parts: list[str] = []
    used = 2  # the brackets
    for item in items:
        part = cut(repr(item))
        if used + len(part) + 2 > limit - 40:  # room for the count of the rest
            break
        parts.append(part)
        used += len(part) + 2
    left = len(items) - len(parts)
    if left:
        parts.append(f"… {counted(left, 'more item')}")
    return "[" + ",\n ".join(parts) + "]"
