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


SERIES = "series"  # drawn as a line in its panel
LIMIT = "limit"  # drawn as the panel's ceiling (a device's total memory)


@dataclass(frozen=True, slots=True)
class Metric:
    source: str  # the source that reads it: "nvml", "torch", "jax", "cupy", "host"
    name: str  # the metric's name within its source: "mem_used"
    unit: str  # "bytes", "percent", "celsius", "watts", "MHz", "bytes/s"
    panel: str  # which chart panel: "memory", "util", "power", "temperature", "rss", ...
    label: str  # what a legend says: "used (NVML)"
    chart: str = ""  # SERIES, LIMIT, or "" (recorded and listed, not drawn)
    kind: str = GAUGE
    scope: str = "gpu"  # "gpu": one column per device; "host": one column

    def column(self, device: int | None = None) -> str:
        """The timeline column: ``gpu{device}.{source}.{name}``, or ``host.{name}``."""
        if self.scope == "host":
            return f"host.{self.name}"
        return f"gpu{device}.{self.source}.{self.name}"

    def describe(self, device: int | None = None) -> dict[str, object]:
        """This metric's column for ``device`` with its metadata, as plain data (what the
        widget's ``columns`` sends the browser, which builds its panels from it)."""
        fields = asdict(self)
        return {
            **fields, "name": self.column(device), "metric": fields["name"], "device": device,
            "order": display_order(self),
        }  # fmt: skip


def _gpu(source: str, name: str, unit: str, panel: str, label: str, chart: str = "") -> Metric:
    return Metric(source, name, unit, panel, label, chart)


# The order is the display order: a panel's lines, and a source's columns, follow it.
REGISTRY: tuple[Metric, ...] = (
    _gpu("nvml", "mem_used", "bytes", "memory", "used (NVML)", SERIES),
    _gpu("nvml", "mem_reserved", "bytes", "memory", "reserved by the driver"),
    _gpu("nvml", "mem_total", "bytes", "memory", "total", LIMIT),
    _gpu("nvml", "gpu_util", "percent", "util", "GPU", SERIES),
    _gpu("nvml", "mem_util", "percent", "util", "memory", SERIES),
    _gpu("nvml", "power", "watts", "power", "power", SERIES),
    _gpu("nvml", "power_limit", "watts", "power", "power limit"),
    _gpu("nvml", "temperature", "celsius", "temperature", "temperature", SERIES),
    _gpu("nvml", "sm_clock", "MHz", "clock", "SM clock"),
    _gpu("nvml", "pcie_tx", "bytes/s", "pcie", "PCIe sent"),
    _gpu("nvml", "pcie_rx", "bytes/s", "pcie", "PCIe received"),
    _gpu("torch", "reserved", "bytes", "memory", "reserved", SERIES),
    _gpu("torch", "allocated", "bytes", "memory", "allocated", SERIES),
    _gpu("torch", "active", "bytes", "memory", "active (torch)"),
    _gpu("torch", "inactive_split", "bytes", "memory", "fragmented (torch)"),
    # JAX's allocator (XLA's BFC pool): "reserved" is the pool it holds from the driver,
    # which preallocation makes 75% of the GPU
    _gpu("jax", "reserved", "bytes", "memory", "pool (JAX)", SERIES),
    _gpu("jax", "allocated", "bytes", "memory", "in use (JAX)", SERIES),
    # CuPy's default memory pool: "reserved" is total_bytes(), "allocated" used_bytes()
    _gpu("cupy", "reserved", "bytes", "memory", "pool (CuPy)", SERIES),
    _gpu("cupy", "allocated", "bytes", "memory", "in use (CuPy)", SERIES),
    Metric("host", "rss", "bytes", "rss", "RSS", SERIES, scope="host"),
    Metric("host", "sys_used", "bytes", "system", "system used", scope="host"),
    Metric("host", "sys_available", "bytes", "system", "system available", scope="host"),
)

# How a user writes each source's name (a framework's own spelling).
_SOURCE_LABELS = {"nvml": "NVML", "torch": "torch", "jax": "JAX", "cupy": "CuPy", "host": "host"}
ALLOCATOR_SOURCES = ("torch", "jax", "cupy")  # the frameworks whose allocators are read


def source_label(source: str) -> str:
    """``"JAX"`` for ``"jax"``: a source's name as its users spell it."""
    return _SOURCE_LABELS.get(source, source)


_BY_KEY = {(m.source, m.name): m for m in REGISTRY}
# host.{name} columns don't name their source: a host metric's name is unique among them all
_HOST = {m.name: m for m in REGISTRY if m.scope == "host"}
_ORDER = {m: i for i, m in enumerate(REGISTRY)}  # display order: a panel's lines follow it


def display_order(m: Metric) -> int:
    """Where ``m`` stands in the registry: panels and their lines are shown in this order."""
    return _ORDER.get(m, len(_ORDER))


def metrics_of(source: str) -> tuple[Metric, ...]:
    """The metrics ``source`` reads, in registry order."""
    return tuple(m for m in REGISTRY if m.source == source)


def metric_of(column: str) -> Metric | None:
    """The metric a timeline column holds (``gpu0.nvml.mem_used``, ``host.rss``); None for a
    column the registry does not know."""
    parts = column.split(".")
    if len(parts) == 2 and parts[0] == "host":
        return _HOST.get(parts[1])
    if len(parts) == 3 and parts[0].startswith("gpu"):
        return _BY_KEY.get((parts[1], parts[2]))
    return None


def device_of(column: str) -> int | None:
    """The NVML index of a ``gpu{i}.…`` column; None for a host column."""
    head = column.split(".", 1)[0]
    return int(head[3:]) if head.startswith("gpu") and head[3:].isdigit() else None


def columns_for(metrics: Iterable[Metric], devices: Iterable[int]) -> list[str]:
    """Columns of ``metrics`` for ``devices``, device-major (a host metric once, at the end)."""
    metrics = tuple(metrics)
    cols = [m.column(d) for d in devices for m in metrics if m.scope == "gpu"]
    return cols + [m.column() for m in metrics if m.scope == "host"]


def metric(source: str, name: str) -> Metric:
    """The registry entry of ``source``'s metric ``name``; a KeyError names a missing one."""
    found = _BY_KEY.get((source, name))
    if found is None:
        raise KeyError(f"no metric {name!r} of source {source!r} in the registry")
    return found


def describe_columns(columns: Iterable[str]) -> list[dict[str, object]]:
    """Each column with its registry metadata (a column the registry lacks: its name alone,
    unit "" and no panel, so a view lists it and draws nothing)."""
    out: list[dict[str, object]] = []
    for column in columns:
        m = metric_of(column)
        if m is None:
            out.append({"name": column, "device": device_of(column), "unit": "", "panel": ""})
        else:
            out.append(m.describe(device_of(column)))
    return out
