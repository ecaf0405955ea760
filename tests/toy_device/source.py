"""The toy's source: one fake GPU whose memory and utilization a test sets. It has the core of
a DeviceSource (nbgpumon/_sources/devices/protocol.py) and none of the optional roles."""

from __future__ import annotations

from types import ModuleType

from nbgpumon._foundation.metrics import columns_for
from nbgpumon._sources.base import DETAIL
from nbgpumon._sources.devices.protocol import DeviceFacts, GpuDevice

from .metrics import GIB, LABEL, METRICS, SOURCE


class ToyDevices:
    """One fake GPU: ``used`` and ``util`` are what it reads; it never raises."""

    name = SOURCE
    label = LABEL
    metrics = METRICS

    def __init__(self, library: ModuleType | None = None, total: int = 8 * GIB) -> None:
        self.total, self.used, self.util, self.fan = total, GIB, 42.0, 30.0
        self._fan_read: float | None = None  # the fan as last read (at the detail cadence)
        self.devices: list[GpuDevice] = []
        self._reason = ""

    # identity and status
    @property
    def available(self) -> bool:
        return not self._reason

    @property
    def status(self) -> str:
        return self._reason or "ok"

    def facts(self) -> DeviceFacts:
        return DeviceFacts("toy-driver 1.0", frozenset())

    def unavailable(self, index: int) -> tuple[str, ...]:
        return ()

    # lifecycle
    def open(self) -> bool:
        self.devices = [GpuDevice(0, "Toy GPU", "TOY-0000", self.total, cuda_index=0)]
        return True

    def close(self) -> None:
        pass

    def not_started(self, reason: str) -> None:
        self._reason = reason

    # the tick and the asks
    def columns(self) -> list[str]:
        return columns_for(self.metrics, [d.index for d in self.devices])

    def read(self, due: frozenset[str] = frozenset()) -> list[float | None]:
        if not self.devices:
            return []
        if DETAIL in due:
            self._fan_read = self.fan
        return [float(self.used), float(self.total), self.util, self._fan_read]

    def read_memory(self) -> list[int | None]:
        return [self.used for _ in self.devices]

    def read_free(self) -> list[int | None]:
        return [self.total - self.used for _ in self.devices]
