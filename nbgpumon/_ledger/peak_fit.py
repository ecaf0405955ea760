"""A step's peak memory against its size: a straight line through the measured points, judged
before it is trusted, and the largest size whose predicted peak fits under a limit.

Pure arithmetic on (size, bytes) points, no numpy. The rules, which the README states:

* ordinary least squares, peak = intercept + slope × size, over the sizes that ran;
* at least ``MIN_SIZES`` (3) sizes: two points always lie on a line, so they check nothing;
* memory that grows by less than ``FLAT`` bytes (or ``FLAT_SHARE`` of its peak) across the
  sizes, or shrinks, "does not grow with size": no prediction;
* a bad fit is refused: R² below ``MIN_R2`` (0.98), or a point further than ``MAX_RESIDUAL``
  (5%) of the largest peak from the line;
* the prediction is the largest whole size whose fitted peak is at most the limit less the
  margin, below any size that ran out of memory; beyond ``FAR`` (4×) the largest size tried
  it says so.

Why a line or a prediction says no is a ``Reason`` with its figures, never a sentence: the
views word it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_SIZES = 3
MIN_R2 = 0.98
MAX_RESIDUAL = 0.05  # of the largest measured peak
FLAT = 2**20  # bytes of growth across the sizes tried below which memory does not grow
FLAT_SHARE = 0.01  # ... or this share of the largest peak, whichever is more
FAR = 4.0  # a prediction this many times the largest size tried gets a warning
GPU_MARGIN_SHARE = 0.05  # fragmentation, block rounding, cuBLAS/cuDNN workspaces
GPU_MARGIN_MIN = 256 * 2**20
HOST_MARGIN_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a line or a prediction gives no size, or a caveat beside a size; the views word it."""


@dataclass(frozen=True, slots=True)
class TooFewSizes(Reason):
    """Fewer than ``MIN_SIZES`` sizes ran (``ran`` 0: none did)."""

    ran: int


@dataclass(frozen=True, slots=True)
class NoGrowth(Reason):
    """Memory grew by less than ``FLAT`` across the sizes, or shrank: its lowest and highest
    peak growth, bytes."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class NotStraight(Reason):
    """A bad line: its R² (None where the peaks do not vary) and its furthest point's distance
    from it, as a share of the largest peak."""

    r2: float | None
    off: float


@dataclass(frozen=True, slots=True)
class NoLimit(Reason):
    """No limit was known to predict under (how it was looked for is the caller's fact)."""


@dataclass(frozen=True, slots=True)
class NothingFits(Reason):
    """Not even size 1 fits: the bytes usable, and the fitted peak at size 1."""

    usable: float
    at_size_1: float


@dataclass(frozen=True, slots=True)
class BelowOutOfMemory(Reason):
    """The size is kept below ``size``, which ran out of memory."""

    size: int


@dataclass(frozen=True, slots=True)
class SmallerThanTried(Reason):
    """The size is smaller than sizes that ran: less memory is free now than while they ran."""


@dataclass(frozen=True, slots=True)
class LineFit:
    """peak ≈ intercept + slope × size for one kind of memory ("torch", "host", …). Bytes."""

    kind: str
    points: tuple[tuple[int, int], ...]  # (size, peak growth) of the sizes that ran
    intercept: float | None
    slope: float | None  # bytes per unit of size
    r2: float | None  # None where the peaks do not vary (nothing to explain)
    max_residual: float | None  # the largest |measured − fitted|, bytes
    ok: bool  # good enough to predict from
    why: Reason | None = None  # why not, when not ok
    grows: bool = True  # False: memory does not grow with size

    def peak_at(self, size: float) -> float | None:
        """The fitted peak growth at ``size``, bytes (None without a line)."""
        if self.intercept is None or self.slope is None:
            return None
        return self.intercept + self.slope * size


def fit_line(kind: str, points: Sequence[tuple[int, int]]) -> LineFit:
    """The least-squares line through ``points`` (size, peak bytes), and whether to trust it."""
    points = tuple(sorted(points))
    n = len(points)
    if n == 0:
        return LineFit(kind, points, None, None, None, None, False, TooFewSizes(0))
    if n == 1:
        return LineFit(kind, points, None, None, None, None, False, TooFewSizes(n))
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = my - slope * mx
    residuals = [y - (intercept + slope * x) for x, y in zip(xs, ys, strict=True)]
    worst = max(abs(r) for r in residuals)
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum(r * r for r in residuals) / ss_tot if ss_tot > 0 else None
    largest = max(abs(y) for y in ys)
    fit = LineFit(kind, points, intercept, slope, r2, worst, False)
    growth = slope * (xs[-1] - xs[0])
    if slope <= 0 or growth < max(FLAT, FLAT_SHARE * largest):
        return _with(fit, NoGrowth(min(ys), max(ys)), grows=False)
    if n < MIN_SIZES:
        return _with(fit, TooFewSizes(n))
    if r2 is None or r2 < MIN_R2 or worst > MAX_RESIDUAL * largest:
        return _with(fit, NotStraight(r2, worst / largest))
    return _with(fit, None, ok=True)


@dataclass(frozen=True, slots=True)
class Prediction:
    """The largest size that fits, for one kind of memory; ``size`` None with the reason why."""

    kind: str
    size: int | None
    peak: float | None  # the fitted peak growth at ``size``, bytes
    limit: int | None  # bytes the step may grow by, before the margin
    margin: int | None
    extrapolation: float | None  # size / the largest size tried (``far`` beyond 4×)
    why: tuple[Reason, ...] = ()  # why no size (one reason); with a size, its caveats

    @property
    def far(self) -> bool:
        """More than ``FAR`` (4×) the largest size tried: worth checking nearer to it."""
        return self.extrapolation is not None and self.extrapolation > FAR

    @property
    def usable(self) -> int | None:
        """The limit less the margin: what the predicted peak stays under."""
        return None if self.limit is None or self.margin is None else self.limit - self.margin


def default_margin(limit: int, gpu: bool) -> int:
    """What is kept back from ``limit``: max(5%, 256 MiB) on a GPU (fragmentation, block
    rounding, workspaces chosen at run time, the CUDA context growing), 5% of host memory."""
    if gpu:
        return max(int(GPU_MARGIN_SHARE * limit), GPU_MARGIN_MIN)
    return int(HOST_MARGIN_SHARE * max(limit, 0))


def predict(
    fit: LineFit,
    limit: int | None,
    margin: int | None,
    largest_tried: int,
    ran_out_at: int | None = None,
) -> Prediction:
    """The largest whole size whose fitted peak is at most ``limit − margin`` bytes and which
    is below ``ran_out_at`` (a size that ran out of memory)."""

    def none(why: Reason | None) -> Prediction:
        return Prediction(fit.kind, None, None, limit, margin, None, () if why is None else (why,))

    if not fit.ok or fit.intercept is None or fit.slope is None:
        return none(fit.why)
    if limit is None or margin is None:
        return none(NoLimit())
    usable = limit - margin
    size = math.floor((usable - fit.intercept) / fit.slope) if usable > fit.intercept else 0
    caveats: list[Reason] = []
    if ran_out_at is not None and size >= ran_out_at:
        size = ran_out_at - 1
        caveats.append(BelowOutOfMemory(ran_out_at))
    if size < 1:
        return none(NothingFits(usable, fit.intercept + fit.slope))
    factor = size / largest_tried
    if size < largest_tried:
        caveats.append(SmallerThanTried())
    peak = fit.intercept + fit.slope * size
    return Prediction(fit.kind, size, peak, limit, margin, factor, tuple(caveats))


def _with(fit: LineFit, why: Reason | None, ok: bool = False, grows: bool = True) -> LineFit:
    return LineFit(
        fit.kind, fit.points, fit.intercept, fit.slope, fit.r2, fit.max_residual, ok, why,
        grows,
    )  # fmt: skip
