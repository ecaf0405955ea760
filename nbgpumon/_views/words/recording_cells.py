"""A recording's cells as every view counts them: the CLI's line, the HTML page, the report
widget's title and a comparison's heading say the same words from here. Which cells a
recording holds is the reader's one rule (``recorded_while``): those that ended after it
started; the kernel's cells from before, which the file keeps too, are named once, as
earlier cells left out."""

from __future__ import annotations

from collections.abc import Sequence

from ..._foundation.wording import counted
from ..._ledger.records import CellRecord
from ..._session.facts.session_data import SessionData


def earlier_cells(data: object) -> int:
    """How many of the kernel's cells ended before ``data``'s recording started (0 for a
    live session, whose cells are all its own)."""
    # imported here: the reader brings numpy, which the live ledger's lists (cells_words
    # through nbgpumon.cells()) must not import into a kernel that has not (test_kernel_lifecycle)
    from ..._recording.reader import RecordedSession

    return data.earlier_cells if isinstance(data, RecordedSession) else 0


def earlier_words(earlier: int) -> str:
    """ "8 earlier cells of the kernel, from before the recording started, left out"; "" for
    none."""
    if not earlier:
        return ""
    before = "of the kernel, from before the recording started, left out"
    return f"{counted(earlier, 'earlier cell')} {before}"


def cells_words(records: Sequence[CellRecord], earlier: int = 0) -> str:
    """ "13 cells", "13 cells and 2 regions", "13 cells; 8 earlier cells of the kernel, from
    before the recording started, left out"."""
    cells = sum(r.kind == "cell" for r in records)
    regions = len(records) - cells
    words = counted(cells, "cell") + (f" and {counted(regions, 'region')}" if regions else "")
    more = earlier_words(earlier)
    return f"{words}; {more}" if more else words


def run_words(data: SessionData) -> str:
    """A comparison's run: its source, and the earlier cells it leaves out, if any."""
    more = earlier_words(earlier_cells(data))
    return f"{data.source} ({more})" if more else data.source
