"""A session as Prometheus metrics: the exporter's collector.

:class:`SessionCollector` is a prometheus_client custom collector: each scrape, ``collect()``
turns a :class:`~nbgpumon._session.facts.session_data.SessionData` (live or recorded) into
metric families.
The families come from the registry's ``export`` names (base units, Prometheus naming), with
the DCGM exporter's label names (``gpu``, ``UUID``, ``modelName``, ``Hostname``; for a MIG
device, as DCGM labels one, its GPU's index, UUID and model with ``GPU_I_PROFILE`` and
``GPU_I_ID``), plus the cell
context: the running cell's execution count, cells by outcome, the last cell's figures, and the
processes recent cells started (``exporter_children.py``). A value
the session does not have (NaN, None) is left out, never exported as NaN.

The HTTP server that serves it sits beside it (``exporter.py``); this module reads only the
session.
"""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Iterable, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from .._foundation.metrics import EXPORT_PREFIX, FRAMEWORK, export_help, registry, source_label
from .._foundation.metrics import Metric as RegistryMetric
from .._foundation.version import __version__
from .._ledger.records import CellRecord
from .._session.facts.session_data import Device, SessionData
from .exporter_children import child_families

GPU_LABELS = ("gpu", "UUID", "modelName", "Hostname")  # the DCGM exporter's label names
# ... and, as it labels a MIG device, its GPU instance: only on a machine with one
MIG_LABELS = ("gpu", "UUID", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "Hostname")
# panels whose figures are the whole GPU's even on a MIG device (NVML has them per GPU only):
# exported, as DCGM exports them, without the GPU instance
_WHOLE_GPU_PANELS = frozenset({"power", "temperature", "clock", "pcie"})
CELL_STATUSES = ("ok", "error", "interrupted", "oom")  # CellRecord.status: each one counted

# Registry units to base units: percent is a ratio (0 to 1), MHz hertz; the rest are base units.
_SCALE = {"percent": 0.01, "MHz": 1e6}
_BASE_UNIT = {"percent": "ratio (0 to 1)", "MHz": "hertz", "bytes/s": "bytes per second"}

# the device's own figures: what it is and its unit, the device source's label between them
_DEVICE_HELP = {
    "gpu_memory_used_bytes": ("GPU memory in use, every process", "bytes"),
    "gpu_memory_reserved_bytes": ("GPU memory the driver reserves", "bytes"),
    "gpu_memory_total_bytes": ("GPU memory, total", "bytes"),
    "gpu_utilization_ratio": ("Fraction of time a kernel ran on the GPU", "0 to 1"),
    "gpu_memory_utilization_ratio": (
        "Fraction of time device memory was read or written",
        "0 to 1",
    ),
    "gpu_power_watts": ("GPU power draw", "watts"),
    "gpu_power_limit_watts": ("GPU enforced power limit", "watts"),
    "gpu_temperature_celsius": ("GPU temperature", "degrees Celsius"),
    "gpu_sm_clock_hertz": ("GPU SM clock", "hertz"),
    "gpu_pcie_transmit_bytes_per_second": ("PCIe bytes sent by the GPU", "per second"),
    "gpu_pcie_receive_bytes_per_second": ("PCIe bytes received by the GPU", "per second"),
}
_HELP = {
    "allocator_allocated_bytes": "Bytes in live tensors or arrays, by this process's "
    "framework allocator",
    "allocator_reserved_bytes": "Bytes this process's framework allocator holds from the "
    "driver (its cache or pool)",
    "host_rss_bytes": "This process's resident memory, bytes",
    "host_memory_used_bytes": "The machine's used memory, bytes",
    "host_memory_available_bytes": "The machine's available memory, bytes",
}


# A family that several frameworks fill: its HELP is this, then what each one's plug-in says of
# its own figure (register's export_help), in their order.
_LEADS = {"allocator_peak_bytes": "The allocator's peak counter: "}


def _help(m: RegistryMetric) -> str:
    """A family's HELP: written out above, what the plug-ins that fill it said of it, or made
    from the registry's label and unit."""
    if m.export in _HELP:
        return _HELP[m.export]
    said = export_help(m.export)
    if said:
        return _LEADS.get(m.export, "") + ", ".join(said)
    unit = _BASE_UNIT.get(m.unit, m.unit)
    if m.export in _DEVICE_HELP:
        what, unit = _DEVICE_HELP[m.export]
        return f"{what} ({source_label(m.source)}), {unit}"
    return f"{m.label} ({source_label(m.source)}), {unit}"


class SessionCollector:
    """The Prometheus collector of one session, with its own :class:`CollectorRegistry` (not
    prometheus_client's global one). Scrapes may come from several server threads at once:
    each builds its families under one lock."""

    def __init__(
        self, data: SessionData, hostname: str | None = None, rank: str | None = None
    ) -> None:
        self.data = data
        self.hostname = hostname if hostname is not None else socket.gethostname()
        self.rank = rank  # the RANK of a distributed job's process: a label of the allocators
        self.scrapes = 0  # collect() calls: scrapes served
        self.error = ""  # the last scrape's failure, one line ("" when none)
        self._lock = threading.Lock()
        # cells_total is a counter: records are counted once each, by their ledger index, so
        # the count keeps growing when the ledger drops its oldest records
        self._counted_below = 0
        self._cells = dict.fromkeys(CELL_STATUSES, 0)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def text(self) -> str:
        """One scrape in Prometheus's text format (what GET /metrics answers)."""
        return generate_latest(self.registry).decode()

    def collect(self) -> Iterable[Metric]:
        """This instant's families. Never raises: a failure is ``error`` and a scrape with
        ``build_info`` alone (a traceback from a server thread would land in a cell's output)."""
        with self._lock:
            self.scrapes += 1
            try:
                families = self._families()
                self.error = ""
            except Exception as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                families = [self._build_info()]
        return families

    # -- families --------------------------------------------------------------------------
    def _families(self) -> list[Metric]:
        latest = self.data.latest() or {}
        devices = self.data.devices  # once: a live session builds them on each read
        families: dict[str, GaugeMetricFamily] = {}
        host = self.hostname
        gpu_names = MIG_LABELS if any(d.mig for d in devices) else GPU_LABELS
        gpu_labels = [_gpu_labels(d, host, gpu_names) for d in devices]
        whole_gpu = [_gpu_labels(d, host, gpu_names, instance=False) for d in devices]
        columns = set(self.data.columns)
        for m in registry():
            if not m.export or m.scope not in ("gpu", "host"):
                continue
            if m.scope == "host":
                self._add(families, m, [host], latest.get(m.column()), ("Hostname",))
                continue
            if devices and m.column(devices[0].index) not in columns:
                continue  # another source's (a device source this session does not read)
            allocator = m.group == FRAMEWORK
            names = (*gpu_names, "framework") if allocator else gpu_names
            if allocator and self.rank is not None:
                names = (*names, "rank")
            per_gpu = m.panel in _WHOLE_GPU_PANELS
            for d, gpu, whole in zip(devices, gpu_labels, whole_gpu, strict=True):
                if allocator and d.cuda_index is None:
                    continue  # hidden from the kernel: no figure of this kernel's is its
                labels = list(whole if per_gpu else gpu)
                if allocator:
                    labels.append(m.source)
                    if self.rank is not None:
                        labels.append(self.rank)
                self._add(families, m, labels, latest.get(m.column(d.index)), names)
        out: list[Metric] = [f for f in families.values() if f.samples]
        records = self.data.records
        out += self._cell_families(records)
        by_index = {d.index: labels for d, labels in zip(devices, gpu_labels, strict=True)}

        def labels_of(index: int) -> list[str]:  # (a GPU the session no longer lists: its index)
            known = by_index.get(index)
            return known if known is not None else _gpu_labels(Device(index, ""), host, gpu_names)

        out += child_families(records, host, gpu_names, labels_of)
        out.append(self._build_info())
        return out

    @staticmethod
    def _add(
        families: dict[str, GaugeMetricFamily],
        m: RegistryMetric,
        labels: list[str],
        value: float | None,
        names: tuple[str, ...],
    ) -> None:
        family = families.get(m.export)
        if family is None:
            family = GaugeMetricFamily(EXPORT_PREFIX + m.export, _help(m), labels=names)
            families[m.export] = family
        if value is None or math.isnan(value):
            return  # not measured: left out, not exported as NaN
        family.add_metric(labels, value * _SCALE.get(m.unit, 1.0))

    def _cell_families(self, records: Sequence[CellRecord]) -> list[Metric]:
        host = [self.hostname]
        self._count_cells(records)
        running = self.data.running()
        count = running.count if running is not None else None
        out: list[Metric] = [
            _gauge(
                "running_cell",
                "Execution count of the cell running now; 0 between cells",
                host,
                count or 0,
            )
        ]
        cells = CounterMetricFamily(
            EXPORT_PREFIX + "cells",
            "Cells run since the monitor started, by how they ended",
            labels=("Hostname", "status"),
        )
        for status, n in self._cells.items():
            cells.add_metric([self.hostname, status], n)
        out.append(cells)
        last = _last_cell(records)
        if last is not None:
            for name, help_text, value in (
                ("last_cell_duration_seconds", "The last cell's run time, seconds", last.duration),
                (
                    "last_cell_peak_bytes",
                    "The last cell's highest allocator peak on one GPU, bytes",
                    last.peak_allocated,
                ),
                (
                    "last_cell_kept_bytes",
                    "Allocator bytes the last cell left behind, all GPUs, bytes",
                    last.retained,
                ),
                (
                    "last_cell_execution_count",
                    "The last cell's execution count",
                    last.execution_count,
                ),
            ):
                if value is not None:
                    out.append(_gauge(name, help_text, host, value))
        return out

    def _count_cells(self, records: Sequence[CellRecord]) -> None:
        """Count the records not counted yet (those at or above ``_counted_below``)."""
        start = len(records)
        while start > 0 and records[start - 1].index >= self._counted_below:
            start -= 1
        for record in records[start:]:
            if record.kind == "cell":
                self._cells[record.status] = self._cells.get(record.status, 0) + 1
        if records:
            self._counted_below = max(self._counted_below, records[-1].index + 1)

    def _build_info(self) -> Metric:
        family = GaugeMetricFamily(
            EXPORT_PREFIX + "build_info", "nbgpumon's version; always 1", labels=("version",)
        )
        family.add_metric([__version__], 1)
        return family


def _gpu_labels(d: Device, host: str, names: tuple[str, ...], instance: bool = True) -> list[str]:
    """A GPU's label values for ``names``. A MIG device's are DCGM's: its GPU's index, UUID
    and model, then its GPU instance's profile and ID, left "" without ``instance`` (a figure
    of the whole GPU's) and for a GPU not in MIG mode."""
    values = {"gpu": str(d.index), "UUID": d.uuid, "modelName": d.name, "Hostname": host}
    if d.mig is not None:
        values.update(UUID=d.mig.gpu_uuid, modelName=d.mig.gpu_name)
        if instance:
            values["GPU_I_PROFILE"] = d.mig.profile
            values["GPU_I_ID"] = "" if d.mig.gpu_instance is None else str(d.mig.gpu_instance)
    return [values.get(name, "") for name in names]


def _gauge(name: str, help_text: str, labels: list[str], value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(EXPORT_PREFIX + name, help_text, labels=("Hostname",))
    family.add_metric(labels, value)
    return family


def _last_cell(records: Sequence[CellRecord]) -> CellRecord | None:
    for record in reversed(records):
        if record.kind == "cell":
            return record
    return None
