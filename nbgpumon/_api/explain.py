"""``nbgpumon.explain()``'s answer: one entry per GPU (data, from forensics), printed as the
breakdown's words and, in a notebook, a stacked bar per GPU."""

from __future__ import annotations

from .._forensics.explain import MemoryExplained
from .._views.explain_text import explain_html, explain_text


class Explanation(tuple[MemoryExplained, ...]):
    """This kernel's GPU memory by what it is: a :class:`MemoryExplained` per GPU, in order,
    each with ``.categories`` (name → bytes) adding up to ``.total``."""

    __slots__ = ()

    def text(self) -> str:
        """The breakdown, as lines."""
        return explain_text(self)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return explain_html(self)
