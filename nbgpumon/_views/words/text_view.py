"""Lines of text as an HTML block, escaped, that wraps between words.

JupyterLab styles every ``<pre>`` of an output with ``word-break: break-all``, which cuts a
long line anywhere ("no N" | "VIDIA driver"); this block's own style wraps it at spaces and
breaks only a word too long for a line of its own (a long path)."""

from __future__ import annotations

import html
from dataclasses import dataclass

WRAP_BETWEEN_WORDS = "word-break:normal;overflow-wrap:anywhere"


def pre_html(text: str) -> str:
    """``text`` (user data included: escaped, never markup) as a ``<pre>`` block."""
    return f'<pre style="{WRAP_BETWEEN_WORDS}">{html.escape(text)}</pre>'


@dataclass(frozen=True)
class TextView:
    """Something to display: plain text for terminals, HTML for notebooks."""

    text: str
    html: str

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html
