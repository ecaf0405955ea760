"""What ``nbgpumon.fit`` found, shown: ``FitResult``, as data and as a short text table.

Its data: ``table``, ``fits``, ``prediction``, ``size``, ``frame()``. Its repr (what a notebook
shows) is every size's row and every kind's line where they fit in ``REPR_LIMIT`` characters,
else the first and last sizes; ``print`` gives the whole table. The reasons, notes and limits
that ``run_fit`` returns as facts are worded here (``words.fit``) into the strings users read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..._foundation.wording import counted, format_bytes, format_seconds
from ..._ledger.peak_fit import LineFit, Prediction
from ..._session.analysis.headroom import Headroom
from ..._session.analysis.size_fit import HOST_CHURN, FitRun, SizeRow
from ..words.fit import conclusion, limit_text, note_text, reason_text, reasons_text
from ..words.text_view import pre_html
from .short import REPR_LIMIT, short_text

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True, slots=True)
class WordedLineFit(LineFit):
    """A ``LineFit`` with its reason in words: why it is not trusted ("" when it is)."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class WordedPrediction(Prediction):
    """A ``Prediction`` in words: ``reason``, why no size or the caveats beside one ("" for
    none); ``limit_note``, where the limit came from ("free 41.3 GiB + cache 0.2 GiB")."""

    limit_note: str = ""
    reason: str = ""


def worded_fit(fit: LineFit) -> WordedLineFit:
    """``fit`` with its reason in words."""
    reason = reason_text(fit.why) if fit.why is not None else ""
    return WordedLineFit(**_fields(fit), reason=reason)


def worded_prediction(prediction: Prediction, room: Headroom | None) -> WordedPrediction:
    """``prediction`` with its reasons and its limit (``room``, None: not known) in words."""
    limit = limit_text(room)
    reason = reasons_text(prediction.why, limit)
    return WordedPrediction(**_fields(prediction), limit_note=limit, reason=reason)


def _fields(fact: LineFit | Prediction) -> dict[str, object]:
    return {f.name: getattr(fact, f.name) for f in dataclasses.fields(fact)}


class FitResult:
    """The outcome of :func:`nbgpumon.fit`.

    ``table``: one :class:`SizeRow` per size run (size, peak growth per kind of memory in
    bytes, whether each peak is exact, seconds, outcome); ``fits``: a ``LineFit`` per kind
    (intercept and slope in bytes, r2, max_residual, ok, reason); ``prediction``: a
    ``Prediction`` per kind (size, or None with the reason; limit, margin, usable, bytes;
    limit_note); ``notes``: what the table does not show, in words;
    ``size``: the largest size that fits every kind that grows with size, or None.
    """

    def __init__(self, run: FitRun) -> None:
        self.run = run
        self.label = run.label
        self.table: list[SizeRow] = list(run.rows)
        self.kinds: list[str] = list(run.kinds)
        self.fits: dict[str, WordedLineFit] = {k: worded_fit(f) for k, f in run.fits.items()}
        self.prediction: dict[str, WordedPrediction] = {
            k: worded_prediction(p, run.limits.get(k)) for k, p in run.predictions.items()
        }
        self.notes: list[str] = [note_text(note) for note in run.notes]

    @property
    def size(self) -> int | None:
        return self.run.size

    def frame(self) -> pandas.DataFrame:
        """The table as a DataFrame: ``size``, ``outcome``, ``seconds``, then per kind
        ``{kind}_peak`` (bytes) and ``{kind}_exact``."""
        import pandas as pd

        rows = []
        for row in self.table:
            out: dict[str, object] = {
                "size": row.size, "outcome": row.outcome, "seconds": row.duration,
            }  # fmt: skip
            for kind in self.kinds:
                out[f"{kind}_peak"] = row.peaks.get(kind)
                out[f"{kind}_exact"] = row.exact.get(kind)
            rows.append(out)
        columns = ["size", "outcome", "seconds"]
        columns += [f"{k}_{part}" for k in self.kinds for part in ("peak", "exact")]
        return pd.DataFrame(rows, columns=columns).convert_dtypes()

    def text(self) -> str:
        """The whole table and every kind's line."""
        return fit_text(self.run)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return short_fit_text(self.run)

    def _repr_html_(self) -> str:
        return pre_html(repr(self))


def short_fit_text(run: FitRun, limit: int = REPR_LIMIT) -> str:
    """:func:`fit_text` in at most ``limit`` characters: the sizes between the first and last
    few left out (said in one row) until it fits."""
    text = fit_text(run)
    keep = len(run.rows)
    while len(text) > limit and keep > 4:
        keep = min(keep - 1, 10)
        text = fit_text(run, keep)
    return short_text(text.splitlines(), "print(result) shows them all", limit)


def fit_text(run: FitRun, rows: int | None = None) -> str:
    """The table of peaks, then a line per kind of memory: its line and what fits. ``rows``:
    show only that many sizes, half the first and half the last."""
    warm = f", after a warm-up call at size {run.warmup}" if run.warmup is not None else ""
    lines = [f"nbgpumon.fit: peak growth of step(size), {counted(len(run.rows), 'size')}{warm}"]
    heads = [f"{kind} peak" for kind in run.kinds]
    widths = [max(11, len(h)) for h in heads]
    size_width = max([4, *(len(str(r.size)) for r in run.rows)])
    columns = "".join(f"  {head:>{width}}" for head, width in zip(heads, widths, strict=True))
    lines.append(f"  {'size':>{size_width}}{columns}  {'time':>8}")
    sizes = []
    for row in run.rows:
        line = "  " + str(row.size).rjust(size_width)
        if row.outcome != "ok":
            sizes.append(f"{line}  ran out of memory ({format_seconds(row.duration)})")
            continue
        for kind, width in zip(run.kinds, widths, strict=True):
            line += f"  {_peak(row.peaks.get(kind), row.exact.get(kind, False)):>{width}}"
        sizes.append(f"{line}  {format_seconds(row.duration):>8}")
    if rows is not None and rows < len(sizes):
        last = len(sizes) - (rows - rows // 2)
        more = f"  {'…':>{size_width}}  {counted(last - rows // 2, 'more size')}"
        sizes = [*sizes[: rows // 2], more, *sizes[last:]]
    lines += sizes
    for kind in run.kinds:
        limit = limit_text(run.limits.get(kind))
        lines.append(f"  {kind}: {conclusion(run.fits[kind], run.predictions[kind], limit)}")
    deciding = run.deciding
    if len(deciding) > 1 and run.size is not None:
        lines.append(f"  all of them: up to size {run.size}")
    ignored = [k for k in run.kinds if run.fits[k].grows and k not in deciding]
    if ignored and run.size is not None:
        lines.append(
            f"  up to size {run.size}: {', '.join(ignored)} grew by less than "
            f"{format_bytes(HOST_CHURN)} across the sizes, so it does not decide"
        )
    lines += [f"  note: {note_text(note)}" for note in run.notes]
    return "\n".join(lines)


def _peak(value: int | None, exact: bool) -> str:
    if value is None:
        return "—"
    return format_bytes(value) if exact else f"≥ {format_bytes(value)}"
