"""What ``nbgpumon.whatif`` found, shown: ``WhatifResult``, its rows as data, a short text table
as its repr and an HTML table in a notebook (every cell escaped text)."""

from __future__ import annotations

import html

from ..._session.analysis.whatif import TrialRow, WhatifRun
from ..words.whatif import (
    HEADS,
    KIND_HEADS,
    KINDS_SAY,
    kind_rows,
    whatif_heading,
    whatif_rows,
    whatif_text,
)
from .short import short_text


class WhatifResult:
    """The outcome of :func:`nbgpumon.whatif`.

    ``baseline``: the step as it is; ``rows``: one per fix, in the order run. Each has ``fix``
    (str), ``applied`` (bool), ``peak`` (bytes: the exact peak allocated on the step's GPU, by
    every framework together; None where unknown), ``seconds``, ``note`` (why a fix did not
    apply, or what to know of its run), ``exact``, ``out_of_memory``, ``record`` (the index
    of its region, ``whatif NAME``, in the ledger) and what its peak was made of, bytes
    (None: unknown): ``activations`` (the part of the peak freed by the run's end),
    ``weights``, ``gradients``, ``optimizer_state`` (as the run left them) and
    ``reserved_peak`` (the most the allocator held from the device)."""

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
        parts = [
            f"<div><p>{html.escape(whatif_heading(self.run))}</p>",
            _table(HEADS, whatif_rows(self.run), note_last=True),
        ]
        kinds = kind_rows(self.run)
        if kinds:
            parts += [
                "<p>what each run's peak is made of:</p>",
                _table(KIND_HEADS, kinds, note_last=False),
                f"<p>{html.escape(KINDS_SAY)}</p>",
            ]
        return "".join(parts) + "</div>"


def _table(heads: tuple[str, ...], rows: list[tuple[str, ...]], note_last: bool) -> str:
    """An HTML table of escaped text: the first column (and the note, ``note_last``) left,
    the figures right."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in heads)
    left = {0, len(heads) - 1} if note_last else {0}
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="text-align:{"left" if i in left else "right"}">{html.escape(cell)}</td>'
            for i, cell in enumerate(cells)
        )
        + "</tr>"
        for cells in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
