"""Lists the API returns, whose repr stays short however long they are: a cell that ends with
``nbgpumon.cells()`` after ten thousand cells shows the newest few, not every record."""

from __future__ import annotations

from typing import TypeVar

from .._ledger.records import CellRecord
from .._views.reprs.cell_list import cell_list_html, cell_list_text
from .._views.reprs.short import short_list

T = TypeVar("T")


class ShortList(list[T]):
    """A plain list (index it, slice it, compare it) whose repr is its first items and how
    many more."""

    def __repr__(self) -> str:
        return short_list(self)


class CellList(ShortList[CellRecord]):
    """Cells and regions, oldest first: a list of :class:`CellRecord`, shown as how many and
    the newest as summary lines (in a notebook, the ledger's table)."""

    def __repr__(self) -> str:
        return cell_list_text(self)

    def _repr_html_(self) -> str:
        return cell_list_html(self)
