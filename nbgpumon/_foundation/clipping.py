"""Text cut to a bound, its cut marked: what a record keeps of a cell's first line or a
process's command line, what a status keeps of a server's answer, what a view has room for.
Not wording (``wording.py``): lower layers bound the text they store with it too."""

from __future__ import annotations


def clipped(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters, its end replaced by "…" where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
