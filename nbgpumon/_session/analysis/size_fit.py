"""What ``fit`` does: runs ``step(size)`` at a few sizes as tracked regions, fits each kind of
memory's peak growth against the size, and predicts the largest size that fits under a limit.

A kind of memory is a framework's allocator on one GPU ("torch", or "torch cuda:1" when the
framework is measured on several) or the host's resident set ("host"). Its peak growth at a
size is the region's peak less what was allocated when the region began, so memory the
kernel already held is not counted twice: the default limit (``headroom``) is what could
still be taken now, after the runs. What it concludes is facts (reasons, notes, how each limit
was found) that the views word.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..._foundation.errors import UsageError
from ..._foundation.units import parse_bytes
from ..._ledger.outcome import is_out_of_memory
from ..._ledger.peak_fit import (
    MIN_SIZES,
    LineFit,
    Prediction,
    Reason,
    default_margin,
    fit_line,
    predict,
)
from .exact_peaks import exact_peaks
from .fit_arguments import FitArguments
from .headroom import Given, Headroom, headroom

if TYPE_CHECKING:
    from ..._ledger.records import CellRecord
    from ..session import Session

HOST = "host"
KEPT_SHARE = 0.05  # a step that keeps more than this share of its peak after it returns
KEPT_MIN = 2**20
# Beside a GPU allocator, host memory that grows by less than this across the sizes is the
# kernel's own churn (lazily loaded CUDA modules, malloc's arenas), not the step's data
HOST_CHURN = 64 * 2**20
Key = tuple[str, int | None]  # (framework, CUDA index), or ("host", None)


@dataclass(frozen=True, slots=True)
class SizeRow:
    """What ``step(size)`` did: its peak growth per kind of memory, bytes."""

    size: int
    outcome: str  # "ok" or "oom" ("ran out of memory": larger sizes were not tried)
    duration: float  # seconds
    peaks: dict[str, int | None]  # kind -> peak growth over what it held before
    exact: dict[str, bool]  # kind -> the peak came from a counter (False: a sampled lower bound)
    kept: dict[str, int | None]  # kind -> what was still held after step(size) returned
    error: str = ""  # the out-of-memory error's first line


@dataclass(frozen=True, slots=True)
class SampledPeaks(Reason):
    """Too few exact peaks for a line: ``sampled`` of the ``ran`` sizes' peaks were sampled
    lower bounds; ``framework`` ("host" for host memory) and ``peak_mode`` say why."""

    sampled: int
    ran: int
    framework: str
    peak_mode: str


@dataclass(frozen=True, slots=True)
class Note:
    """Something about the whole run that its table does not show; the views word it."""


@dataclass(frozen=True, slots=True)
class RanOut(Note):
    """``step(size)`` ran out of memory (``error``: the error's first line), in the unmeasured
    warm-up call when ``warmup``; larger sizes were not tried."""

    size: int
    error: str
    warmup: bool = False


@dataclass(frozen=True, slots=True)
class SampledShown(Note):
    """Some peaks in the table are sampled lower bounds (≥), left out of the fit."""


@dataclass(frozen=True, slots=True)
class KeptAfter(Note):
    """``step(size)`` still held ``kept`` bytes of ``kind`` after it returned."""

    kind: str
    size: int
    kept: int


@dataclass(frozen=True, slots=True)
class NoWarmup(Note):
    """No warm-up call: the first size also paid for compiling and workspaces."""


@dataclass(frozen=True, slots=True)
class FitRun:
    """Everything ``fit`` measured and concluded (``FitResult`` shows it)."""

    label: str
    rows: tuple[SizeRow, ...]
    kinds: tuple[str, ...]  # in table order: the GPU allocators, then host
    fits: dict[str, LineFit]
    predictions: dict[str, Prediction]
    warmup: int | None  # the size of the unmeasured first call, None without one
    notes: tuple[Note, ...] = field(default=())
    limits: dict[str, Headroom] = field(default_factory=dict)  # kind -> its limit, and how found

    @property
    def size(self) -> int | None:
        """The largest size that fits every kind of memory that grows with size; None when
        one of them has no prediction (a bad fit, too few sizes) or none grows. Host memory
        beside a GPU allocator counts only when it grows by ``HOST_CHURN`` or more."""
        growing = [self.predictions[k] for k in self.deciding]
        if not growing or any(p.size is None for p in growing):
            return None
        return min(p.size for p in growing if p.size is not None)

    @property
    def deciding(self) -> list[str]:
        """The kinds of memory whose predictions make ``size``."""
        gpu = any(k != HOST for k in self.kinds)
        return [
            k for k in self.kinds
            if self.fits[k].grows and not (gpu and k == HOST and _growth(self.fits[k]) < HOST_CHURN)
        ]  # fmt: skip


def _growth(fit: LineFit) -> float:
    """How much the measured peaks span, bytes."""
    peaks = [peak for _, peak in fit.points]
    return max(peaks) - min(peaks) if peaks else 0.0


def run_fit(session: Session, asked: FitArguments) -> FitRun:
    """Run ``asked.step`` at each of its sizes (smallest first) and fit; see ``nbgpumon.fit``."""
    step, label, warmup = asked.step, asked.label, asked.warmup
    if not callable(step):
        raise UsageError("fit(step, sizes=...) takes a function of one size: step(size)")
    order = _sizes(asked.sizes)
    limits = _limits(asked.limit)
    margin_bytes = None if asked.margin is None else _bytes("margin", asked.margin)
    warmed = None
    rows: list[tuple[int, CellRecord]] = []
    ran_out: tuple[int, str] | None = None
    with exact_peaks(session):
        if warmup:
            warmed = order[0]
            error = _call(step, warmed)  # compiles, builds workspaces and gradients: unmeasured
            if error:
                ran_out = (warmed, error)
        for size in order if ran_out is None else ():
            region = session.cells_pipeline.track(f"{label} size={size}")
            error = _call(step, size, region)
            assert region.record is not None
            rows.append((size, region.record))
            if error:
                ran_out = (size, error)  # larger sizes would run out too
                break
    table, kinds = _table(rows)
    notes = _notes(table, kinds, warmed, ran_out)
    largest = max((r.size for r in table if r.outcome == "ok"), default=order[0])
    fits, predictions, rooms = {}, {}, {}
    for kind, key in kinds.items():
        fits[kind] = _fit_exact(kind, key, table, session.config.peak_mode)
        room = rooms[kind] = _limit_for(session, kind, key, limits)
        kept = default_margin(room.bytes, key[0] != HOST) if room.bytes is not None else None
        predictions[kind] = predict(
            fits[kind],
            room.bytes,
            margin_bytes if margin_bytes is not None else kept,
            largest,
            ran_out[0] if ran_out else None,
        )
    return FitRun(label, tuple(table), tuple(kinds), fits, predictions, warmed, notes, rooms)


def _fit_exact(kind: str, key: Key, table: list[SizeRow], peak_mode: str) -> LineFit:
    """The line through the exact peaks only: a sampled one is a lower bound (``≥ 0 B`` for a
    peak that came and went between two samples), which would bend the line."""
    ran = [r for r in table if r.outcome == "ok" and r.peaks[kind] is not None]
    exact = [(r.size, r.peaks[kind]) for r in ran if r.exact[kind]]
    fit = fit_line(kind, exact)  # type: ignore[arg-type]
    sampled = len(ran) - len(exact)
    if sampled and len(exact) < MIN_SIZES:
        why = SampledPeaks(sampled, len(ran), key[0], peak_mode)
        return dataclasses.replace(fit, ok=False, grows=True, why=why)
    return fit


def _call(step: Callable[[int], Any], size: int, region: Any = None) -> str:
    """Run ``step(size)``, in ``region`` if given, dropping what it returns; "" or the first
    line of the out-of-memory error it raised. Any other error propagates."""
    try:
        if region is None:
            step(size)
        else:
            with region:
                step(size)
    except BaseException as exc:  # only running out of memory is kept
        if not is_out_of_memory(exc):
            raise
        text = str(exc).strip().splitlines()
        # (``exc`` and its traceback, which holds the step's frames and their tensors, go
        # when this block ends)
        return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
    finally:
        gc.collect()  # what the step made in cycles goes before the next size
    return ""


def _table(rows: list[tuple[int, CellRecord]]) -> tuple[list[SizeRow], dict[str, Key]]:
    measured: list[tuple[int, CellRecord, dict[Key, tuple[int | None, bool, int | None]]]] = []
    keys: dict[Key, None] = {}
    for size, record in rows:
        per_key: dict[Key, tuple[int | None, bool, int | None]] = {}
        for device in record.devices:
            for usage in device.frameworks:
                key = (usage.framework, device.cuda_index)
                per_key[key] = (
                    _minus(usage.peak_allocated, usage.allocated_before),
                    usage.peak_exact,
                    _minus(usage.allocated_after, usage.allocated_before),
                )
        per_key[(HOST, None)] = (
            _minus(record.rss_peak, record.rss_before),
            record.rss_peak_exact,
            _minus(record.rss_after, record.rss_before),
        )
        keys.update(dict.fromkeys(per_key))
        measured.append((size, record, per_key))
    if not keys:
        keys[(HOST, None)] = None
    ordered = sorted(keys, key=lambda k: k[0] == HOST)  # the GPU allocators first
    names = _names(ordered)
    table = []
    for size, record, per_key in measured:
        table.append(
            SizeRow(
                size=size,
                outcome="ok" if record.status == "ok" else "oom",
                duration=record.duration,
                peaks={names[k]: per_key.get(k, (None, False, None))[0] for k in ordered},
                exact={names[k]: per_key.get(k, (None, False, None))[1] for k in ordered},
                kept={names[k]: per_key.get(k, (None, False, None))[2] for k in ordered},
                error=record.error if record.status != "ok" else "",
            )
        )
    return table, {names[k]: k for k in ordered}


def _names(keys: list[Key]) -> dict[Key, str]:
    """A kind's name: "torch", or "torch cuda:1" for a framework measured on several GPUs."""
    devices: dict[str, int] = {}
    for framework, _ in keys:
        devices[framework] = devices.get(framework, 0) + 1
    return {
        (framework, cuda): framework if devices[framework] == 1 else f"{framework} cuda:{cuda}"
        for framework, cuda in keys
    }


def _notes(
    table: list[SizeRow], kinds: dict[str, Key], warmed: int | None, ran_out: tuple[int, str] | None
) -> tuple[Note, ...]:
    notes: list[Note] = []
    if ran_out is not None:
        notes.append(RanOut(ran_out[0], ran_out[1], warmup=not table))
    if any(
        not r.exact[k] for r in table if r.outcome == "ok" for k in kinds if r.peaks[k] is not None
    ):
        notes.append(SampledShown())
    for kind, key in kinds.items():
        if key[0] == HOST:
            continue  # RSS after a step includes what malloc keeps for reuse: not a leak
        for row in table:
            kept, peak = row.kept[kind], row.peaks[kind]
            if kept and peak and kept > max(KEPT_MIN, KEPT_SHARE * peak) and row.outcome == "ok":
                notes.append(KeptAfter(kind, row.size, kept))
                break
    if warmed is None:
        notes.append(NoWarmup())
    return tuple(notes)


def _limit_for(
    session: Session, kind: str, key: Key, limits: int | dict[str, int] | None
) -> Headroom:
    if isinstance(limits, int):
        return Headroom(limits, Given())
    if isinstance(limits, dict) and kind in limits:
        return Headroom(limits[kind], Given())
    return headroom(session, None if key[0] == HOST else key[0], key[1])


def _sizes(sizes: Iterable[int]) -> list[int]:
    try:
        given = list(sizes)
    except TypeError:
        given = [sizes]
    if not given or not all(_whole(s) and s > 0 for s in given):
        raise UsageError(
            f"fit(step, sizes=...) takes positive whole sizes, e.g. sizes=(16, 32, 48, 64), "
            f"not {sizes!r}"
        )
    return sorted(set(given))


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _limits(limit: int | str | Mapping[str, int | str] | None) -> int | dict[str, int] | None:
    if limit is None:
        return None
    if isinstance(limit, Mapping):
        return {str(kind): _bytes(f"limit[{kind!r}]", value) for kind, value in limit.items()}
    return _bytes("limit", limit)


def _bytes(name: str, value: object) -> int:
    try:
        return parse_bytes(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise UsageError(f"fit: {name} is {exc}") from None


def _minus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b
