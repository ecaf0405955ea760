"""A ``Comparison`` holds two runs of a notebook, cell by cell. What ``nbgpumon.compare``
returns."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .._foundation.errors import UsageError
from .._ledger.matching import SIMILAR, match_records
from .._ledger.records import CellRecord
from .._session.analysis.comparison import (
    REGRESSION,
    Thresholds,
    compare_pairs,
    frameworks_of,
    only_in,
)
from .._session.facts.session_data import SessionData
from .._views.comparison.table import comparison_table, short_comparison_table
from .._views.comparison.words import CellChange, thresholds_line, worded
from .._views.words.recording_cells import run_words
from .monitor import Monitor
from .short_lists import CellList, ShortList

if TYPE_CHECKING:
    import pandas

    from .._views.words.text_view import TextView


class Comparison:
    """Run B against run A, cell by cell. It offers ``.changes`` (a row each, in A's order),
    ``.frame()``, ``.regressions``, ``.only_in_a`` / ``.only_in_b``, the table as its repr,
    ``.report()`` (bqplot) and ``.report_html()``."""

    def __init__(
        self, a: SessionData, b: SessionData, thresholds: Thresholds, similar: float = SIMILAR
    ) -> None:
        self.a, self.b = a, b
        self.thresholds = thresholds
        self.pairs = match_records(list(a.records), list(b.records), similar)
        self.changes: list[CellChange] = ShortList(worded(compare_pairs(self.pairs, thresholds)))

    @property
    def regressions(self) -> list[CellChange]:
        """The rows flagged "regression", in A's order (``.reason`` says why)."""
        return ShortList(c for c in self.changes if c.verdict == REGRESSION)

    @property
    def only_in_a(self) -> list[CellRecord]:
        return CellList(only_in(self.changes, "A"))

    @property
    def only_in_b(self) -> list[CellRecord]:
        return CellList(only_in(self.changes, "B"))

    def frame(self) -> pandas.DataFrame:
        """One row per pair, and per cell of one run only; columns in the README."""
        from .._views.frames import comparison_frame  # pandas: when asked for

        return comparison_frame(self.changes, frameworks_of(self.changes))

    def table(self) -> TextView:
        limits = thresholds_line(self.thresholds)
        return comparison_table(self.changes, run_words(self.a), run_words(self.b), limits)

    def short_table(self) -> TextView:
        """The table short, whatever the number of cells: the regressions first, then the
        other rows while they fit (the repr; ``print`` gives the whole table)."""
        limits = thresholds_line(self.thresholds)
        return short_comparison_table(self.changes, run_words(self.a), run_words(self.b), limits)

    def __str__(self) -> str:
        return self.table().text

    def __repr__(self) -> str:
        return self.short_table().text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return self.short_table().html

    def report(self) -> Any:
        """Both runs' memory on one axis, aligned by cell, and the table (an ipywidget)."""
        from .._views.comparison.report import comparison_report  # bqplot: when asked for

        return comparison_report(self.a, self.b, self.changes, self.table().html)

    def report_html(self) -> str:
        """The comparison as a self-contained HTML page (no network needed to open it), as
        ``Recorded.report_html()`` gives a session's."""
        from .._views.comparison.page import comparison_page

        return comparison_page(self.a, self.b, self.changes, self.table())


def compare(
    a: Any, b: Any, current: Monitor | None, thresholds: Thresholds, similar: float = SIMILAR
) -> Comparison:
    """``a`` and ``b`` (recording paths, ``Recorded`` or ``Monitor``; ``b`` None: ``current``)
    compared; see ``nbgpumon.compare``."""
    if b is None:
        if current is None or current.closed:
            raise UsageError(
                "no live monitor to compare with: pass two runs, "
                "nbgpumon.compare(A, B), each a recording's path or nbgpumon.load(PATH)"
            )
        b = current
    return Comparison(_run(a, "a"), _run(b, "b"), thresholds, similar)


def _run(given: Any, name: str) -> SessionData:
    if isinstance(given, str | os.PathLike):
        from .recorded import load_recorded  # numpy and SQLite: only for a recording

        return load_recorded(given)  # a RecordingError is one line already
    if isinstance(given, Monitor):
        return given.data
    if isinstance(given, SessionData):
        return given
    raise UsageError(
        f"compare's {name} is a recording's path, nbgpumon.load(PATH) or nbgpumon.monitor(), "
        f"not {type(given).__name__}"
    )
