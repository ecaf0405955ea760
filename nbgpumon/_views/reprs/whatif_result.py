"""What ``nbgpumon.whatif`` found, shown: ``WhatifResult``, its rows as data, a short text table
as its repr and an HTML table in a notebook (every cell escaped text)."""

from __future__ import annotations

import html

from ..._session.analysis.whatif import TrialRow, WhatifRun
from ..words.whatif import HEADS, whatif_heading, whatif_rows, whatif_text
from .short import short_text


class WhatifResult:
    """The outcome of :func:`nbgpumon.whatif`.

    ``baseline``: the step as it is; ``rows``: one per fix, in the order run. Each has ``fix``
    (str), ``applied`` (bool), ``peak`` (bytes: the exact peak allocated on the step's GPU, by
    every framework together; None where unknown), ``seconds``, ``note`` (why a fix did not
    apply, or what to know of its run), ``exact``, ``out_of_memory`` and ``record`` (the index
    of its region, ``whatif NAME``, in the ledger)."""

    def __init__(self, run: WhatifRun) -> None:
        self.run = run
        self.baseline: TrialRow = run.baseline
        self.rows: list[TrialRow] = list(run.rows)

    def text(self) -> str:
        """The heading and the whole table."""
        return whatif_text(self.run)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return short_text(self.text().splitlines(), "print(result) shows them all")

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADS)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td style="text-align:{"left" if i in (0, len(cells) - 1) else "right"}">'
                f"{html.escape(cell)}</td>"
                for i, cell in enumerate(cells)
            )
            + "</tr>"
            for cells in whatif_rows(self.run)
        )
        return (
            f"<div><p>{html.escape(whatif_heading(self.run))}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )
