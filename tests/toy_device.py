"""A toy device source, the whole of it in this one file (docs/architecture.md, "Add a device
source"): one fake GPU whose memory and utilization a test sets. Importing this module
registers its metrics in the global registry: import it in a child process
(tests/test_toy_device.py), so that the test process's registry stays as test_registry expects.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from nbgpumon._foundation.metrics import DEVICE, LIMIT, SERIES, Metric, columns_for, register
from nbgpumon._sources.devices.protocol import DeviceFacts, GpuDevice, GpuProcess, ProcessUtil

GIB = 2**30

# 1. Its metrics, in the DEVICE group: the roles the session, ledger and views ask for are
# mem_used (the ledger's device memory), mem_total (the chart's ceiling) and gpu_util.
METRICS = register(
    DEVICE,
    Metric("toy", "mem_used", "bytes", "memory", "used (Toy)", SERIES,
           export="gpu_memory_used_bytes"),
    Metric("toy", "mem_total", "bytes", "memory", "total", LIMIT,
           export="gpu_memory_total_bytes"),
    Metric("toy", "gpu_util", "percent", "util", "GPU", SERIES, export="gpu_utilization_ratio"),
    label="Toy",
)  # fmt: skip


# 2. The source: a DeviceSource (nbgpumon/_sources/devices/protocol.py).
class ToyDevices:
    """One fake GPU: ``used`` and ``util`` are what it reads; it never raises."""

    name = "toy"
    label = "Toy"
    metrics = METRICS

    def __init__(self, total: int = 8 * GIB) -> None:
        self.total, self.used, self.util = total, GIB, 42.0
        self.devices: list[GpuDevice] = []
        self.mig_devices: list[list[Any] | None] = []
        self.mapping_note = ""
        self.reading_since = self.asking_since = self.last_took = 0.0
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

    @property
    def binding_version(self) -> str | None:
        return "toy-binding 0.1"

    def disabled_reads(self) -> dict[tuple[int, str], str]:
        return {}

    def notes(self) -> list[str]:
        return []

    def unavailable(self, index: int) -> tuple[str, ...]:
        return ()

    def not_answering_for(self, now: float | None = None) -> float:
        return 0.0

    def call_counts(self) -> tuple[int, int]:
        return 0, 0

    # lifecycle
    def open(self) -> bool:
        self.devices = [GpuDevice(0, "Toy GPU", "TOY-0000", self.total, cuda_index=0)]
        self.mig_devices = [None]
        return True

    def close(self) -> None:
        pass

    def not_started(self, reason: str) -> None:
        self._reason = reason

    def remap_cuda(self, cuda_uuids: list[str]) -> None:
        pass

    # the tick and the asks
    def columns(self) -> list[str]:
        return columns_for(self.metrics, [d.index for d in self.devices])

    def read(self, due: frozenset[str] = frozenset()) -> list[float | None]:
        return [float(self.used), float(self.total), self.util] if self.devices else []

    def read_memory(self) -> list[int | None]:
        return [self.used for _ in self.devices]

    def read_free(self) -> list[int | None]:
        return [self.total - self.used for _ in self.devices]

    def read_mig_used(self, migs: Sequence[Any]) -> list[int | None]:
        return [None for _ in migs]

    # processes
    def read_processes(self) -> list[GpuProcess]:
        return [GpuProcess(0, os.getpid(), self.used, True)] if self.devices else []

    def read_process_utilization(self) -> list[ProcessUtil]:
        return []

    def accounted_peak(self, index: int, pid: int) -> int | None:
        return None
