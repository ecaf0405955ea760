"""An allocator source's counters as timeline columns, one set per GPU (by device index)."""

from __future__ import annotations

from collections.abc import Iterable

from .._foundation.metrics import columns_for
from .base import ALLOCATOR, AllocatorSource, AllocatorStats
from .devices.protocol import CudaMappingRole, DeviceSource, GpuDevice


def read_by_cuda_index(
    allocator: AllocatorSource, devices: Iterable[GpuDevice]
) -> dict[int, AllocatorStats]:
    """The allocator's counters for each device CUDA can see, by CUDA index. Only for an
    allocator that is ``active()``: reading one that is not would initialise its framework."""
    out = {}
    for device in devices:
        if device.cuda_index is not None:
            stats = allocator.read(device.cuda_index)
            if stats is not None:
                out[device.cuda_index] = stats
    return out


class AllocatorColumns:
    """The :class:`~.base.Source` that samples an allocator for the timeline.

    It is read at the allocator cadence, and only once the framework is up (never
    initialising it); the first read also maps the device source's devices to the framework's
    by UUID, where the source has the CUDA mapping role (``mapping``: the session asked it once).
    """

    changes_on = frozenset({ALLOCATOR})  # (Source): on other ticks the sampler keeps its row

    def __init__(
        self,
        allocator: AllocatorSource,
        devices: DeviceSource,
        mapping: CudaMappingRole | None,
    ) -> None:
        self.allocator, self.device_source, self._mapping = allocator, devices, mapping
        self.name = allocator.name
        self.metrics = allocator.metrics
        self._width = len(self.metrics)
        self._row: list[float | None] = [None] * (len(devices.devices) * self._width)
        self._mapped = False

    @property
    def status(self) -> str:
        return self.allocator.status

    def columns(self) -> list[str]:
        return columns_for(self.metrics, [d.index for d in self.device_source.devices])

    def read(self, due: frozenset[str]) -> list[float | None]:
        if ALLOCATOR in due and self.allocator.active():
            if not self._mapped:  # (once: an exact numbering, where the source can make one)
                if self._mapping is not None:
                    self._mapping.remap_cuda(self.allocator.device_uuids())
                self._mapped = True
            stats = read_by_cuda_index(self.allocator, self.device_source.devices)
            for device in self.device_source.devices:
                if device.cuda_index in stats:
                    at = device.index * self._width
                    values = self.allocator.timeline_values(stats[device.cuda_index])
                    self._row[at : at + self._width] = values
        return self._row  # the sampler copies it into the tick's row
