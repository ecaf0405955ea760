"""What ``fit`` concluded, in words: why a line or a prediction gives no size, the caveats beside
a size, the run's notes and where each limit came from, from the facts ``run_fit`` returns."""

from __future__ import annotations

from ..._foundation.wording import format_bytes
from ..._ledger.peak_fit import (
    MIN_SIZES,
    BelowOutOfMemory,
    LineFit,
    NoGrowth,
    NoLimit,
    NothingFits,
    NotStraight,
    Prediction,
    Reason,
    SmallerThanTried,
    TooFewSizes,
)
from ..._session.analysis.exact_peaks import why_sampled
from ..._session.analysis.headroom import (
    Basis,
    DeviceUnreadable,
    FreeAndCache,
    Given,
    Headroom,
    HostAvailable,
    HostUnreadable,
    UnderCap,
)
from ..._session.analysis.size_fit import (
    KeptAfter,
    Note,
    NoWarmup,
    RanOut,
    SampledPeaks,
    SampledShown,
)


def reasons_text(reasons: tuple[Reason, ...], limit: str = "") -> str:
    """A prediction's reasons, ``; ``-joined ("" for none); ``limit`` is where its limit came
    from (:func:`limit_text`), said when no limit was known."""
    return "; ".join(reason_text(reason, limit) for reason in reasons)


def reason_text(reason: Reason, limit: str = "") -> str:
    """``NothingFits(1 MiB, 96 MiB)`` -> "not even size 1 fits under 1.0 MiB (96.0 MiB at size
    1)"; ``limit`` as for :func:`reasons_text`."""
    match reason:
        case TooFewSizes(ran=0):
            return "no size ran"
        case TooFewSizes(ran=2):
            return f"2 sizes always fit a line, which checks nothing: run at least {MIN_SIZES}"
        case TooFewSizes(ran=ran):
            return f"{ran} size ran: run at least {MIN_SIZES} to fit and check a line"
        case NoGrowth(low=low, high=high):
            return f"does not grow with size (peak {_peak_range(low, high)})"
        case NotStraight(r2=r2, off=off):
            return (
                f"not a straight line (R² {r2 or 0:.3f}, a point {off:.0%} of the largest peak "
                "off it): it cannot be extrapolated"
            )
        case SampledPeaks(sampled=sampled, ran=ran, framework=framework, peak_mode=mode):
            return (
                f"{sampled} of {ran} peaks were sampled lower bounds (≥), which a line cannot be "
                f"fitted to: {why_sampled(framework, mode)}"
            )
        case NoLimit():
            return f"no limit known{f' ({limit})' if limit else ''}: pass limit="
        case NothingFits(usable=usable, at_size_1=at_size_1):
            return (
                f"not even size 1 fits under {format_bytes(usable)} "
                f"({format_bytes(at_size_1)} at size 1)"
            )
        case BelowOutOfMemory(size=size):
            return f"below size {size}, which ran out of memory"
        case SmallerThanTried():
            return "smaller than sizes that ran: less memory is free now than while they ran"
    raise TypeError(f"no words for {reason!r}")


def note_text(note: Note) -> str:
    """One of the run's notes: "no warm-up call: the first size also paid for …"."""
    match note:
        case RanOut(size=size, error=error, warmup=True):
            return f"the warm-up call at size {size} ran out of memory: {error}"
        case RanOut(size=size, error=error):
            return f"size {size} ran out of memory ({error}); larger sizes not tried"
        case SampledShown():
            return (
                "≥: a lower bound sampled while it ran, not an exact peak, and left out of the fit"
            )
        case KeptAfter(kind=kind, size=size, kept=kept):
            return (
                f"{kind}: step({size}) kept {format_bytes(kept)} after it returned; the "
                "prediction assumes a step keeps nothing"
            )
        case NoWarmup():
            return "no warm-up call: the first size also paid for compiling and workspaces"
    raise TypeError(f"no words for {note!r}")


def limit_text(room: Headroom | None) -> str:
    """Where a limit came from: "free 41.3 GiB + cache 0.2 GiB", "limit="; "" when unknown."""
    if room is None:
        return ""
    basis: Basis = room.basis
    match basis:
        case Given():
            return "limit="
        case HostAvailable():
            return f"available {format_bytes(room.bytes)}"
        case HostUnreadable():
            return "host memory unreadable"
        case DeviceUnreadable(framework=framework, cuda=cuda, device_source=device_source):
            return f"{framework} on cuda:{cuda} or {device_source} unreadable now"
        case FreeAndCache(free=free, cache=cache):
            return f"free {format_bytes(free)} + cache {format_bytes(cache)}"
        case UnderCap(cap_name=cap_name, cap=cap, allocated=allocated):
            return f"{cap_name} {format_bytes(cap)} - allocated {format_bytes(allocated)}"
    raise TypeError(f"no words for {basis!r}")


def conclusion(fit: LineFit, prediction: Prediction, limit: str = "") -> str:
    """One kind's line and what fits: "32.0 MiB per size + 64.0 MiB (R² 1.000): fits up to size
    4240 under 133 GiB (free 138 GiB + cache 2.1 GiB - margin 7.0 GiB); 66.2× …"."""
    if fit.intercept is None or fit.slope is None or not fit.grows:
        return reason_text(fit.why) if fit.why is not None else ""
    sign = "-" if fit.intercept < 0 else "+"
    line = f"{format_bytes(fit.slope)} per size {sign} {format_bytes(abs(fit.intercept))}"
    line += f" (R² {fit.r2:.3f})" if fit.r2 is not None else ""
    reasons = reasons_text(prediction.why, limit)
    if prediction.size is None:
        return f"{line}: {reasons}"
    line += (
        f": fits up to size {prediction.size} under {format_bytes(prediction.usable)} "
        f"({limit or 'limit'} - margin {format_bytes(prediction.margin)})"
    )
    if prediction.extrapolation is not None:
        line += f"; {prediction.extrapolation:.1f}× the largest size tried"
        line += ", far: check it by running a size nearer it" if prediction.far else ""
    return f"{line}; {reasons}" if reasons else line


def _peak_range(low: float, high: float) -> str:
    if format_bytes(low) == format_bytes(high):
        return format_bytes(high)
    return f"{format_bytes(low)} to {format_bytes(high)}"
