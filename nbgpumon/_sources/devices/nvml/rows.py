"""An NVML metric as one row, and the tables NVML's source reads by, derived from the rows.

A row says what the metric is (its registry entry), when it is read (its cadence), the read it
comes from (the name :meth:`NvmlLibrary.query` takes as ``metric=``: what NVML can disable on
a device) with, for the detail and slow cadences, its reader, and which disabled reads leave it
without a value. :func:`layout` turns the rows into each metric's place in a device's values,
the reads each cadence makes, and what a disabled read makes unavailable, once, at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...._foundation.metrics import Metric
from ...base import DETAIL, FAST, SLOW
from .reads import Reader


@dataclass(frozen=True, slots=True)
class NvmlMetric:
    """One NVML metric: its declaration, cadence, read and what makes it unavailable."""

    metric: Metric  # its registry entry (registered by metrics.py, in the rows' order)
    # FAST: read every tick by the bound memory and utilization calls (NvmlSource.read);
    # DETAIL or SLOW: by ``reader``, at that cadence
    cadence: str
    read: str  # NvmlLibrary.query's ``metric=``; rows naming one read share its one call
    reader: Reader | None = None  # DETAIL and SLOW: what asks NVML (reads.py)
    # the reads whose disabling on a device leaves it no value; (): its own ``read``
    unavailable_with: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.metric.name


@dataclass(frozen=True, slots=True)
class CadenceRead:
    """One read a cadence makes per device, and where its values go in the device's values."""

    read: str
    reader: Reader
    slots: tuple[int, ...]  # one a row that names the read, in the rows' order


@dataclass(frozen=True, slots=True)
class Layout:
    """What the rows say, as the tables the source reads by."""

    names: tuple[str, ...]  # the metrics in a device's values, in this order
    at: dict[str, int]  # a metric's place in them
    detail: tuple[CadenceRead, ...]  # the detail cadence's reads
    slow: tuple[CadenceRead, ...]  # the slow cadence's
    off_with: dict[str, tuple[str, ...]]  # a read -> the metrics its disabling makes unavailable


def layout(rows: Sequence[NvmlMetric], fast_filled: frozenset[str]) -> Layout:
    """The tables ``rows`` make; ``fast_filled``: the FAST metrics the bound calls fill (a
    row that says FAST of another metric is a ValueError: it would never be read)."""
    names = tuple(r.name for r in rows)
    at = {name: i for i, name in enumerate(names)}
    fast = {r.name for r in rows if r.cadence == FAST}
    if fast != fast_filled:
        raise ValueError(
            f"NVML's fast metrics are {sorted(fast_filled)}, read by the bound calls; "
            f"rows say {sorted(fast)}: give another DETAIL or SLOW and a reader"
        )
    off: dict[str, list[str]] = {}
    for r in rows:
        for read in r.unavailable_with or (r.read,):
            off.setdefault(read, []).append(r.name)
    return Layout(
        names,
        at,
        _reads(rows, DETAIL, at),
        _reads(rows, SLOW, at),
        {read: tuple(found) for read, found in off.items()},
    )


def _reads(rows: Sequence[NvmlMetric], cadence: str, at: dict[str, int]) -> tuple[CadenceRead, ...]:
    """``cadence``'s reads, in the order their first rows are listed."""
    by_read: dict[str, CadenceRead] = {}
    for r in rows:
        if r.cadence not in (FAST, DETAIL, SLOW):
            raise ValueError(f"NVML metric {r.name!r}: no cadence {r.cadence!r}")
        if r.cadence != cadence:
            continue
        if r.reader is None:
            raise ValueError(f"NVML metric {r.name!r} is read at {cadence!r}: give it a reader")
        known = by_read.get(r.read)
        if known is not None and known.reader is not r.reader:
            raise ValueError(f"NVML metrics sharing the read {r.read!r} share one reader")
        slots = (*known.slots, at[r.name]) if known is not None else (at[r.name],)
        by_read[r.read] = CadenceRead(r.read, r.reader, slots)
    return tuple(by_read.values())
