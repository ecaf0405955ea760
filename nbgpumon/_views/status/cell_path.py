"""What the cell path costs, in words (``%gpumon status``), from its ``CellPathCost``. The line
gives the median and p99 of the last cells' start and end together, what of it the cells' replies
waited for (where a quiet cell's end was finished after its reply while the kernel was idle; one
the next cell's start finished was waited for), then the costliest stages'."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.wording import counted

if TYPE_CHECKING:
    from ..._session.facts.status import CellPathCost

STAGES_SHOWN = 5  # the costliest stages named; the rest cost less than these


def cell_path_line(cost: CellPathCost | None) -> str:
    """One line: ``cell path: 0.061 ms a cell (p99 0.12 ms) over the last 200 cells; replies
    waited for 0.031 ms (p99 0.052): start readings 0.021 ms (p99 0.040), …`` (what the replies
    waited for where some cell's end was finished after its reply)."""
    if cost is None:
        return "cell path: no cell measured yet"
    head = (
        f"cell path: {_ms(cost.median)} a cell (p99 {_ms(cost.p99)}) over the last "
        f"{counted(cost.cells, 'cell')}"
    )
    if cost.waited_median is not None and cost.waited_p99 is not None:
        head += (  # (the rest of a quiet cell's end came after its reply)
            f"; replies waited for {_ms(cost.waited_median)} "
            f"(p99 {_ms(cost.waited_p99, unit=False)})"
        )
    stages = [
        f"{s.stage} {_ms(s.median)} (p99 {_ms(s.p99, unit=False)})"
        for s in cost.stages[:STAGES_SHOWN]
    ]
    return f"{head}: {', '.join(stages)}" if stages else head


def _ms(seconds: float, unit: bool = True) -> str:
    ms = seconds * 1e3
    text = f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.0f}"
    return f"{text} ms" if unit else text
