"""The metric registry: every number nbgpumon samples, declared once.

A metric's entry says which source reads it, its unit, whether it is a gauge or a counter,
the chart panel it belongs to and its label. The timeline's columns, the recording's sample
columns, the text views and the widget's ``columns`` (sent with this metadata, so the front end
builds its panels from it) all come from here. Adding a metric is an entry here plus one read
in its source (docs/architecture.md, "Add a metric").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

GAUGE = "gauge"  # a level: memory in use, utilization
COUNTER = "counter"  # only grows; a view shows its rate


@dataclass(frozen=True, slots=True)
class Metric:
    source: str  # the source that reads it: "nvml", "torch", "host"
    name: str  # unique within the scope: "mem_used"
    unit: str  # "bytes", "percent", "celsius", "watts", "MHz", "bytes/s"
    panel: str  # "memory", "utilization", "power", "temperature", "clock", "pcie", "host"
    label: str  # what a legend says: "used (NVML)"
    kind: str = GAUGE
    scope: str = "gpu"  # "gpu": one column per device; "host": one column

    def column(self, device: int | None = None) -> str:
        """The timeline column: ``gpu{device}.{name}``, or ``host.{name}``."""
        return f"host.{self.name}" if self.scope == "host" else f"gpu{device}.{self.name}"

    def describe(self) -> dict[str, str]:
        """The metadata a view needs, as plain data (the widget sends it to the browser)."""
        return asdict(self)


def _gpu(source: str, name: str, unit: str, panel: str, label: str) -> Metric:
    return Metric(source, name, unit, panel, label)


# Order matters only for display: a source's columns come in the order of its entries.
REGISTRY: tuple[Metric, ...] = (
    _gpu("nvml", "mem_used", "bytes", "memory", "used (NVML)"),
    _gpu("nvml", "mem_reserved", "bytes", "memory", "reserved by the driver"),
    _gpu("nvml", "mem_total", "bytes", "memory", "total"),
    _gpu("nvml", "gpu_util", "percent", "utilization", "GPU busy"),
    _gpu("nvml", "mem_util", "percent", "utilization", "memory busy"),
    _gpu("nvml", "temperature", "celsius", "temperature", "temperature"),
    _gpu("nvml", "power", "watts", "power", "power"),
    _gpu("nvml", "power_limit", "watts", "power", "power limit"),
    _gpu("nvml", "sm_clock", "MHz", "clock", "SM clock"),
    _gpu("nvml", "pcie_tx", "bytes/s", "pcie", "PCIe sent"),
    _gpu("nvml", "pcie_rx", "bytes/s", "pcie", "PCIe received"),
    _gpu("torch", "allocated", "bytes", "memory", "allocated (torch)"),
    _gpu("torch", "reserved", "bytes", "memory", "reserved (torch)"),
    _gpu("torch", "active", "bytes", "memory", "active (torch)"),
    _gpu("torch", "inactive_split", "bytes", "memory", "fragmented (torch)"),
    Metric("host", "rss", "bytes", "host", "this kernel (RSS)", scope="host"),
    Metric("host", "sys_used", "bytes", "host", "system used", scope="host"),
    Metric("host", "sys_available", "bytes", "host", "system available", scope="host"),
)

_BY_KEY = {(m.scope, m.name): m for m in REGISTRY}


def metrics_of(source: str) -> tuple[Metric, ...]:
    """The metrics ``source`` reads, in registry order."""
    return tuple(m for m in REGISTRY if m.source == source)


def metric_of(column: str) -> Metric | None:
    """The metric a timeline column holds (``gpu0.mem_used``, ``host.rss``); None if unknown."""
    device, _, name = column.partition(".")
    return _BY_KEY.get(("host" if device == "host" else "gpu", name))


def columns_for(metrics: Iterable[Metric], devices: Iterable[int]) -> list[str]:
    """Columns of ``metrics`` for ``devices``, device-major (a host metric once, at the end)."""
    metrics = tuple(metrics)
    cols = [m.column(d) for d in devices for m in metrics if m.scope == "gpu"]
    return cols + [m.column() for m in metrics if m.scope == "host"]


def metric(source: str, name: str) -> Metric:
    """The registry entry of ``source``'s metric ``name``; a KeyError names a missing one."""
    for m in REGISTRY:
        if m.source == source and m.name == name:
            return m
    raise KeyError(f"no metric {name!r} of source {source!r} in the registry")
