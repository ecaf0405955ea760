"""What NVML's detail and slow cadences ask of a GPU: one small reader a read.

A reader is handed a :class:`BoundQuery` (NVML's query bound to one GPU and one read) and
returns the value of the metric that names its read, or, for a read that several metrics share
(PCIe's two counters: one call), a tuple of their values in the order their rows are listed.
It never raises: what NVML cannot give is None.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .library import NA, NvmlLibrary

# NVML constants used here, by value, so that the code reads the same with any binding version.
_TEMPERATURE_GPU = 0
_CLOCK_SM = 1
# NVML_FI_DEV_PCIE_COUNT_TX_BYTES and _RX_BYTES: counters, differenced below
_PCIE_FIELDS = (197, 198)
_SUCCESS = 0


class BoundQuery:
    """:meth:`NvmlLibrary.query` bound to one GPU's handle and one read. ``ask(function, *args)``
    calls ``function(handle, *args)`` as that read and returns its answer, or None (``NA``) where
    NVML gave none; NotSupported disables the read on this GPU, which then asks no more. ``kept`` is
    the reader's, to keep between calls (a counter's last value)."""

    __slots__ = ("_handle", "_index", "_query", "kept", "read")

    def __init__(self, library: NvmlLibrary, index: int, handle: object, read: str) -> None:
        self._query, self._index, self._handle = library.query, index, handle
        self.read = read
        self.kept: dict[str, Any] = {}

    def __call__(self, function: str, *args: Any) -> Any:
        return self._query(function, self._handle, *args, device=self._index, metric=self.read)


Reader = Callable[[BoundQuery], Any]


def temperature(ask: BoundQuery) -> float | None:
    """The GPU's temperature, °C."""
    return ask("nvmlDeviceGetTemperature", _TEMPERATURE_GPU)


def power(ask: BoundQuery) -> float | None:
    """The GPU's power draw, watts (NVML says milliwatts)."""
    return _watts(ask("nvmlDeviceGetPowerUsage"))


def power_limit(ask: BoundQuery) -> float | None:
    """The power limit the driver enforces, watts."""
    return _watts(ask("nvmlDeviceGetEnforcedPowerLimit"))


def sm_clock(ask: BoundQuery) -> float | None:
    """The SM clock, MHz."""
    return ask("nvmlDeviceGetClockInfo", _CLOCK_SM)


def pcie(ask: BoundQuery) -> tuple[float | None, float | None]:
    """PCIe bytes per second (sent, received) since the last call: counter fields,
    differenced (nvmlDeviceGetPcieThroughput blocks for 20 ms)."""
    values = ask("nvmlDeviceGetFieldValues", _PCIE_FIELDS)
    if values is NA:
        return None, None
    tx, rx = values  # one a field asked for, in their order
    counters = ask.kept
    if not counters:
        counters["tx"], counters["rx"] = _Counter(), _Counter()
    return _rate(counters["tx"], tx), _rate(counters["rx"], rx)


@dataclass
class _Counter:
    """Last value of a monotonic counter, to turn it into a rate."""

    value: int | None = None
    time_us: int | None = None


def _rate(counter: _Counter, value: object) -> float | None:
    if getattr(value, "nvmlReturn", 1) != _SUCCESS:
        return None
    raw = int(value.value.ullVal)  # type: ignore[attr-defined]
    stamp = int(getattr(value, "timestamp", 0)) or int(time.time() * 1e6)
    rate = None
    if counter.value is not None and counter.time_us is not None and stamp > counter.time_us:
        delta = raw - counter.value
        if delta >= 0:  # a reset counter gives one missing value, not a negative rate
            rate = delta / ((stamp - counter.time_us) / 1e6)
    counter.value, counter.time_us = raw, stamp
    return rate


def _watts(milliwatts: Any) -> float | None:
    return None if milliwatts is NA else milliwatts / 1000.0
