"""A comparison of two runs as a text table and an HTML table (every user string escaped)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..._foundation.clipping import clipped
from ..._foundation.wording import counted, format_bytes, format_percent, format_seconds
from ..._ledger.matching import ONLY_IN_A, ONLY_IN_B
from ..._session.analysis.comparison import REGRESSION, Figures, frameworks_of
from ..palette import REGRESSION_ROW
from ..reprs.short import LINE_LIMIT, REPR_LIMIT, cut_middle, short_text
from ..words.text_view import TextView
from .words import CellChange

MAX_SOURCE = 40  # characters of a cell's first line in the table
HTML_ROWS = 50  # rows of a comparison's HTML repr (its page and report have every one)
_ALL_ROWS = "print(comparison) shows every row, .frame() has them"
_LEFT = ("cell", "match", "verdict", "why", "source")


def comparison_table(
    changes: Sequence[CellChange],
    source_a: str,
    source_b: str,
    thresholds_line: str,
    shown: Sequence[CellChange] | None = None,
) -> TextView:
    """The comparison as a table: a heading (the runs, the counts, the thresholds), then a row per
    cell in A's order; a figure reads ``A → B``. Columns empty in every row are left out, and so are
    a lone framework's, which are the GPU columns again (the frame keeps them). ``shown``: the rows
    to show, of ``changes`` and in its order (all by default); the heading counts them all."""
    shown = changes if shown is None else shown
    frameworks = frameworks_of(shown)
    frameworks = frameworks if len(frameworks) > 1 else []
    headers = ["cell", "match", "time", "host peak", "host kept", "GPU peak", "GPU kept"]
    headers += [f"{fw} {what}" for fw in frameworks for what in ("peak", "kept")]
    headers += ["GPU util", "verdict", "why", "source"]
    rows = [_row(c, frameworks) for c in shown]
    keep = [
        i
        for i, h in enumerate(headers)
        if h in ("cell", "match", "verdict", "source")
        or any(row[i] not in ("", "—", "— → —") for row in rows)
    ]
    headers = [headers[i] for i in keep]
    rows = [[row[i] for i in keep] for row in rows]
    heading = _heading(changes, source_a, source_b, thresholds_line)
    if not rows:
        return TextView("\n".join(heading), "".join(f"<p>{html.escape(h)}</p>" for h in heading))
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(headers)]
    lines = [*heading, ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in [headers, *rows]]  # fmt: skip
    return TextView("\n".join(lines), _html(heading, headers, rows, shown))


def short_comparison_table(
    changes: Sequence[CellChange],
    source_a: str,
    source_b: str,
    thresholds_line: str,
    limit: int = REPR_LIMIT,
) -> TextView:
    """:func:`comparison_table` short, whatever the number of cells. It gives the heading, then the
    regressions first and the other rows after them (in A's order) while the text stays within
    ``limit`` characters and the HTML within ``HTML_ROWS`` rows; a last line says how many rows are
    left out and where they all are."""
    first = sorted(range(len(changes)), key=lambda i: changes[i].verdict != REGRESSION)

    def table(count: int) -> TextView:
        picked = [changes[i] for i in sorted(first[:count])]
        a, b = cut_middle(source_a, LINE_LIMIT), cut_middle(source_b, LINE_LIMIT)
        view = comparison_table(changes, a, b, thresholds_line, picked)
        if count == len(changes):
            return view
        rest = f"… {counted(len(changes) - count, 'more row')}: {_ALL_ROWS}"
        return TextView(f"{view.text}\n{rest}", f"{view.html}<p>{html.escape(rest)}</p>")

    count = min(len(changes), HTML_ROWS)
    html_view = text_view = table(count)
    while count and len(text_view.text) > limit:
        count -= 1
        text_view = table(count)
    text = text_view.text  # a table's rows whole (they may be wider than a line of words)
    if len(text) > limit:  # no row fits
        text = short_text(text.splitlines(), _ALL_ROWS, limit)
    return TextView(text, html_view.html)


def _heading(
    changes: Sequence[CellChange], source_a: str, source_b: str, thresholds_line: str
) -> list[str]:
    paired = sum(1 for c in changes if c.a is not None and c.b is not None)
    flagged = sum(1 for c in changes if c.verdict == REGRESSION)
    better = sum(1 for c in changes if c.verdict and c.verdict != REGRESSION)
    alone_a = sum(1 for c in changes if c.pair.how == ONLY_IN_A)
    alone_b = sum(1 for c in changes if c.pair.how == ONLY_IN_B)
    return [
        f"A: {source_a}",
        f"B: {source_b}",
        f"{paired} matched, {flagged} regression{'s' * (flagged != 1)}, {better} improved, "
        f"{alone_a} only in A, {alone_b} only in B ({thresholds_line})",
    ]


def _row(c: CellChange, frameworks: Sequence[str]) -> list[str]:
    a, b = c.a, c.b
    cells = [
        c.name,
        c.pair.how,
        _pair(a, b, lambda f: format_seconds(f.duration)),
        _pair(a, b, lambda f: format_bytes(f.host_peak)),
        _pair(a, b, lambda f: format_bytes(f.host_kept)),
        _pair(a, b, lambda f: format_bytes(f.gpu_peak)),
        _pair(a, b, lambda f: format_bytes(f.gpu_kept)),
    ]
    for fw in frameworks:
        for k in (0, 1):
            cells.append(_pair(a, b, lambda f, fw=fw, k=k: _framework(f, fw, k)))
    cells.append(_pair(a, b, lambda f: format_percent(f.util) if f.util is not None else "—"))
    status = _status(a, b)
    cells += [c.verdict or status, c.reason, _cut(c.label)]
    return cells


def _framework(f: Figures, framework: str, k: int) -> str:
    return format_bytes(f.frameworks.get(framework, (None, None))[k])


def _pair(a: Figures | None, b: Figures | None, fmt) -> str:
    one = fmt(a) if a is not None else "—"
    two = fmt(b) if b is not None else "—"
    if a is None or b is None:
        return two if a is None else one
    return one if one == two else f"{one} → {two}"


def _status(a: Figures | None, b: Figures | None) -> str:
    """A failed cell's status, when the verdict does not already say it."""
    statuses = {f.status for f in (a, b) if f is not None} - {"ok"}
    return ", ".join(sorted(statuses))


def _cut(label: str) -> str:
    return clipped(label, MAX_SOURCE)


def _html(
    heading: list[str], headers: list[str], rows: list[list[str]], changes: Sequence[CellChange]
) -> str:
    aligns = ["left" if h in _LEFT else "right" for h in headers]
    head = "".join(
        f'<th style="text-align:{a};white-space:nowrap">{html.escape(h)}</th>'
        for h, a in zip(headers, aligns, strict=True)
    )
    body = ""
    for row, change in zip(rows, changes, strict=True):
        tint = f' style="background:{REGRESSION_ROW}"' if change.verdict == REGRESSION else ""
        body += f"<tr{tint}>" + "".join(
            f'<td style="text-align:{a};white-space:nowrap">{html.escape(v)}</td>'
            for v, a in zip(row, aligns, strict=True)
        ) + "</tr>"  # fmt: skip
    intro = "".join(f"<div>{html.escape(line)}</div>" for line in heading)
    return (
        f'<div class="nbgpumon-compare">{intro}<table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
