"""``FitResult``: what ``nbgpumon.fit`` found, as data (``table``, ``fits``, ``prediction``,
``size``, ``frame()``) and as the short text table its repr is (what a notebook shows): every
size's row and every kind's line where they fit in ``REPR_LIMIT`` characters, else the first and
last sizes; ``print`` gives the whole table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.wording import counted, format_bytes, format_seconds
from ..._ledger.peak_fit import LineFit, Prediction
from ..._session.analysis.size_fit import HOST_CHURN, FitRun, SizeRow
from ..words.text_view import pre_html
from .short import REPR_LIMIT, short_text

if TYPE_CHECKING:
    import pandas


class FitResult:
    """The outcome of :func:`nbgpumon.fit`.

    ``table``: one :class:`SizeRow` per size run (size, peak growth per kind of memory in
    bytes, whether each peak is exact, seconds, outcome); ``fits``: a ``LineFit`` per kind
    (intercept and slope in bytes, r2, max_residual, ok, reason); ``prediction``: a
    ``Prediction`` per kind (size, or None with the reason; limit, margin, usable, bytes);
    ``size``: the largest size that fits every kind that grows with size, or None.
    """

    def __init__(self, run: FitRun) -> None:
        self.run = run
        self.label = run.label
        self.table: list[SizeRow] = list(run.rows)
        self.kinds: list[str] = list(run.kinds)
        self.fits: dict[str, LineFit] = dict(run.fits)
        self.prediction: dict[str, Prediction] = dict(run.predictions)
        self.notes: list[str] = list(run.notes)

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
        lines.append(f"  {kind}: {_conclusion(run.fits[kind], run.predictions[kind])}")
    deciding = run.deciding
    if len(deciding) > 1 and run.size is not None:
        lines.append(f"  all of them: up to size {run.size}")
    ignored = [k for k in run.kinds if run.fits[k].grows and k not in deciding]
    if ignored and run.size is not None:
        lines.append(
            f"  up to size {run.size}: {', '.join(ignored)} grew by less than "
            f"{format_bytes(HOST_CHURN)} across the sizes, so it does not decide"
        )
    lines += [f"  note: {note}" for note in run.notes]
    return "\n".join(lines)


def _peak(value: int | None, exact: bool) -> str:
    if value is None:
        return "—"
    return format_bytes(value) if exact else f"≥ {format_bytes(value)}"


def _conclusion(fit: LineFit, prediction: Prediction) -> str:
    if fit.intercept is None or fit.slope is None or not fit.grows:
        return fit.reason
    sign = "-" if fit.intercept < 0 else "+"
    line = f"{format_bytes(fit.slope)} per size {sign} {format_bytes(abs(fit.intercept))}"
    line += f" (R² {fit.r2:.3f})" if fit.r2 is not None else ""
    if prediction.size is None:
        return f"{line}: {prediction.reason}"
    limit = prediction.limit_note or "limit"
    line += (
        f": fits up to size {prediction.size} under {format_bytes(prediction.usable)} "
        f"({limit} - margin {format_bytes(prediction.margin)})"
    )
    if prediction.extrapolation is not None:
        line += f"; {prediction.extrapolation:.1f}× the largest size tried"
        line += ", far: check it by running a size nearer it" if prediction.far else ""
    return f"{line}; {prediction.reason}" if prediction.reason else line
