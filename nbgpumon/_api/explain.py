"""``nbgpumon.explain()`` answers with one entry per GPU (data, from forensics), printed as the
breakdown's words and, in a notebook, a stacked bar per GPU. ``explain(cell=N)`` answers the same
for one cell of the ledger, at its end and at its peak. Its repr (a cell ending with it, in a
terminal) is the words up to ``REPR_LIMIT`` characters; ``print`` gives them all."""

from __future__ import annotations

from collections.abc import Iterable

from .._forensics.explain import CellExplained, MemoryExplained, explain_cell
from .._foundation.errors import UsageError
from .._ledger.records import CellRecord
from .._views.memory.explain import (
    cell_explain_html,
    cell_explain_text,
    explain_html,
    explain_text,
)
from .._views.reprs.short import short_text


class Explanation(tuple[MemoryExplained, ...]):
    """This kernel's GPU memory by what it is: a :class:`MemoryExplained` per GPU, in order,
    each with ``.categories`` (name → bytes) adding up to ``.total``."""

    __slots__ = ()

    def text(self) -> str:
        """The breakdown, as lines."""
        return explain_text(self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return short_text(self.text().splitlines(), "print(nbgpumon.explain()) shows them all")

    def _repr_html_(self) -> str:
        return explain_html(self)


class CellExplanation(tuple[CellExplained, ...]):
    """One cell's GPU memory by what it is, as a :class:`CellExplained` per GPU. Each has
    ``.categories`` (at the cell's end) adding up to ``.total``, ``.kept`` (by kind, since its
    start) and ``.peak_categories`` (what stayed, and the activations and temporaries it freed
    before its end) adding up to ``.peak``."""

    __slots__ = ()

    def text(self) -> str:
        """The breakdown, as lines."""
        return cell_explain_text(self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return short_text(self.text().splitlines(), "print() of it shows them all")

    def _repr_html_(self) -> str:
        return cell_explain_html(self)


def explain_recorded_cell(records: Iterable[CellRecord], cell: object) -> CellExplanation:
    """The breakdown of cell ``cell`` (its execution count; the newest run of it) among
    ``records``, newest first. A UsageError, in one line, where there is none."""
    if isinstance(cell, bool) or not isinstance(cell, int):
        raise UsageError(f"cell is a cell's number (12 for In[12]), not {cell!r}")
    record = next((r for r in records if r.kind == "cell" and r.execution_count == cell), None)
    if record is None:
        raise UsageError(f"no cell [{cell}] in the ledger: %gpumon cells lists those there are")
    found = explain_cell(record)
    if not found:
        raise UsageError(
            f"cell [{cell}] has no breakdown: no framework had the GPU up at its end (or it "
            "was recorded before nbgpumon read cells by kind)"
        )
    return CellExplanation(found)
