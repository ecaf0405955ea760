"""A list of cells and regions as a cell's end shows it (``nbgpumon.cells()``,
``Recorded.cells()``). It says how many, then the newest as summary lines (text) or the ledger table
(HTML), short however long the ledger is."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..._ledger.records import CellRecord
from ..words.cell_summary import summary_line
from ..words.cells_table import cells_table
from ..words.recording_cells import cells_words
from .short import cut, short_text

NEWEST_LINES = 10  # summary lines in the text
NEWEST_ROWS = 20  # rows of the HTML table (as %gpumon cells)
_REST = "index the list, or .cells_frame() for a table of them all"


def _heading(records: Sequence[CellRecord], shown: int, order: str = "") -> str:
    """``"120 cells and 4 regions; the newest 10, oldest first:"``"""
    if not records:
        return "no cells recorded"
    what = cells_words(records)
    order = f", {order}" if order else ""
    newest = f"; the newest {shown}{order}" if shown < len(records) else order
    return f"{what}{newest}:"


def _line(record: CellRecord) -> str:
    """Its summary line, and a cell's first line as a comment (a region's label is in its
    name)."""
    source = f"  # {cut(record.label, 60)}" if record.kind == "cell" and record.label else ""
    return f"  {summary_line(record)}{source}"


def cell_list_text(records: Sequence[CellRecord]) -> str:
    """How many, then the newest ``NEWEST_LINES`` as summary lines, oldest first."""
    newest = list(records[-NEWEST_LINES:])
    lines = [_heading(records, len(newest), "oldest first"), *map(_line, newest)]
    return short_text(lines, _REST)


def cell_list_html(records: Sequence[CellRecord]) -> str:
    """How many, then the newest ``NEWEST_ROWS`` as the ledger's table (newest first)."""
    newest = list(records[-NEWEST_ROWS:])
    heading = _heading(records, len(newest))  # (a table, newest at the top)
    table = cells_table(newest).html if records else ""
    return f"<div class='nbgpumon-cell-list'><p>{html.escape(heading)}</p>{table}</div>"
