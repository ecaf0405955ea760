"""IPython's pre/post_run_cell events, bound to the cell pipeline: one measurement per cell."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .._ledger.ledger import Measurement
from .._ledger.outcome import classify_exception
from .._session.cell_clock import LINES
from .._session.cell_pipeline import CellOutcome, CellPipeline
from .after_reply import after_reply_of


class CellHooks:
    """IPython's pre/post_run_cell events, bound to a cell pipeline. Handles IPython 7.34 (Colab's),
    8 and 9.

    IPython 9.8 moved the execution-count increment before ``pre_run_cell``; the count is
    therefore taken from the result in ``post_run_cell``, and the offset between the two is
    learned so that regions inside a running cell know their cell's number. IPython 7's
    ``ExecutionInfo`` has no ``cell_id``: its records have none.

    Only the user's cells are measured: an execution with ``store_history=False`` (a front
    end's own code, as VS Code runs it; ``run_cell`` from ``%%capture`` or ``%%gpumon profile``
    inside a cell) is no cell. IPython sends no events at all for a silent one. What such an
    execution allocates between cells is in the next cell's starting readings, so no cell is
    charged with it; one that runs inside a cell is part of that cell.
    """

    def __init__(
        self,
        shell: Any,
        pipeline: CellPipeline,
        on_outcome: Callable[[CellOutcome], None] | None = None,
    ) -> None:
        self.shell, self.pipeline, self.on_outcome = shell, pipeline, on_outcome
        self._open: Measurement | None = None
        self._nested = 0  # run_cell calls inside the open cell
        self._count_at_pre = 0
        self._executions = 0  # IPython's pre_execute events since the last cell's end
        self._offset = _initial_offset()
        # a quiet cell's end finished after its reply (a kernel's); None: at once (a terminal)
        self._after_reply = after_reply_of(shell)

    def register(self) -> None:
        self.shell.events.register("pre_execute", self.pre_execute)
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)

    def unregister(self) -> None:
        self.pipeline.finish_pending()  # (the last cell's end, where it was put off)
        for name, callback in (
            ("pre_execute", self.pre_execute),
            ("pre_run_cell", self.pre_run_cell),
            ("post_run_cell", self.post_run_cell),
        ):
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(name, callback)

    def pre_execute(self) -> None:
        # every execution, silent ones too (they send no pre_run_cell): one besides the next
        # cell's own ran between two cells
        self._executions += 1

    def pre_run_cell(self, info: Any = None) -> None:
        if not users_cell(info):
            return  # its post_run_cell is skipped too, by its result's info
        if self._open is not None:
            # run_cell(store_history=True) from inside a running cell: part of the outer cell,
            # which keeps its one measurement
            self._nested += 1
            return
        if self._executions > 1:
            # a front end's own code ran since the last cell (it may have bound names)
            self.pipeline.other_code_ran()
        raw = getattr(info, "raw_cell", "") or ""
        self._count_at_pre = int(getattr(self.shell, "execution_count", 0) or 0)
        count = self._count_at_pre - self._offset
        self._open = self.pipeline.begin(count, raw, getattr(info, "cell_id", None))

    def post_run_cell(self, result: Any = None) -> None:
        # (IPython gives a store_history=False result the current count, not None: learning
        # the offset from it would number the next cells wrongly)
        if not users_cell(getattr(result, "info", None)):
            return
        if self._nested:
            self._nested -= 1
            return
        opened, self._open = self._open, None
        self._executions = 0  # (those after this cell's end are counted from here)
        if opened is None:
            return  # an empty cell: IPython sends post_run_cell without pre_run_cell
        count = getattr(result, "execution_count", None)
        if isinstance(count, int):
            self._offset = self._count_at_pre - count
        exception = raised(result)
        status, error = classify_exception(exception)
        outcome = self.pipeline.end(
            opened, status, error, count, exception, after_reply=self._after_reply
        )
        clock = self.pipeline.clock
        if outcome is None:  # a quiet cell: the rest of its end comes after its reply
            clock.replied()
            return
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        clock.lap(LINES)
        clock.done()


def users_cell(info: Any) -> bool:
    """Whether an IPython ExecutionInfo is a cell the user ran (kept in history, not silent);
    no info at all counts as one, as before IPython gave it."""
    return getattr(info, "store_history", True) is not False and not getattr(info, "silent", False)


def _initial_offset() -> int:
    try:
        import IPython

        return 1 if tuple(IPython.version_info[:2]) >= (9, 8) else 0
    except Exception:
        return 0


def raised(result: Any) -> BaseException | None:
    """The exception an IPython ExecutionResult ended with, if any."""
    return getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
