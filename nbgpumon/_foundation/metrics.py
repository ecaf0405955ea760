"""The metric registry, where every number nbgpumon samples is declared once.

A metric's entry says which source reads it, its unit, whether it is a gauge or a counter,
the chart panel it belongs to and its label. The timeline's columns, the recording's sample
columns, the text views and the widget's ``columns`` (sent with this metadata, so the front end
builds its panels from it) all come from here. A source declares its own metrics (NVML's: one
row each, with its read; docs/recipes.md, "Add a metric").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace

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
    scope: str = "gpu"  # "gpu": one column per device; "host": one column; "node": per remote GPU
    export: str = ""  # the exporter's metric family (Prometheus naming, base units); "": none
    # its line's colour in every picture (chart, report, static SVG); "": a palette's
    color: str = ""
    # what reads it: DEVICE (a device source), PROCESS (the process list's split), FRAMEWORK (a
    # framework's allocator), HOST,
    # NODE (a remote GPU through Prometheus); set by :func:`register`
    group: str = ""

    def column(self, device: int | None = None) -> str:
        """The metric's timeline column, ``gpu{device}.{source}.{name}`` or ``host.{name}``."""
        if self.scope == "host":
            return f"host.{self.name}"
        return f"gpu{device}.{self.source}.{self.name}"

    def node_column(self, host: str, gpu: str) -> str:
        """A remote GPU's column in the cluster timeline: ``node:{host}.{gpu}.{name}``, where
        ``gpu`` is ``gpu0``, or ``gpu0-mig3`` for a MIG instance."""
        return f"node:{host}.{gpu}.{self.name}"

    def describe(self, device: int | None = None) -> dict[str, object]:
        """This metric's column for ``device`` with its metadata, as plain data (what the
        widget's ``columns`` sends the browser, which builds its panels from it)."""
        fields = asdict(self)
        return {
            **fields, "name": self.column(device), "metric": fields["name"], "device": device,
            "order": display_order(self),
        }  # fmt: skip


def _node(name: str, unit: str, panel: str, label: str, chart: str = "", color: str = "") -> Metric:
    return Metric("cluster", name, unit, panel, label, chart, scope="node", color=color)


# What reads a metric. The registry lists the groups in this order (a panel's lines follow it),
# and each group's metrics in the order they were registered.
DEVICE = "device"  # a device source: the device's own view (NVML's, _sources/devices/)
PROCESS = "process"  # this kernel's process and its children on each GPU (_sources/processes/)
FRAMEWORK = "framework"  # a framework plug-in's allocator: this kernel's view
HOST = "host"  # this kernel's host memory and the machine's
NODE = "node"  # another node's GPU, read from a Prometheus server
GROUPS = (DEVICE, PROCESS, FRAMEWORK, HOST, NODE)

_groups: dict[str, list[Metric]] = {group: [] for group in GROUPS}
_BY_KEY: dict[tuple[str, str], Metric] = {}
_HOST: dict[str, Metric] = {}  # host.{name} columns don't name their source: unique names
_NODE: dict[str, Metric] = {}
_ORDER: dict[Metric, int] = {}
_LABELS: dict[str, str] = {}  # source -> how its users write it ("JAX"); default: its name
# export family -> source -> what that source's figure in it is (the exporter's HELP)
_EXPORT_HELP: dict[str, dict[str, str]] = {}
_entries: tuple[Metric, ...] = ()


def register(
    group: str, *metrics: Metric, label: str = "", export_help: Mapping[str, str] | None = None
) -> tuple[Metric, ...]:
    """Declare ``metrics`` (one source's, in their display order) as read by a source of ``group``.
    Also declares ``label``, how users write that source ("JAX"), and ``export_help``, by export
    family, what this source's figure in it is (the exporter's HELP names each source's in a family
    several fill). Returns them as registered (with ``group`` set). Registering the same metric
    again is a no-op, so a module imported twice (a reload) declares nothing twice; a different one
    under a name already taken is a ValueError."""
    global _entries
    if group not in _groups:
        raise ValueError(f"no metric group {group!r}; one of {', '.join(GROUPS)}")
    out = []
    for m in metrics:
        if label:
            _LABELS[m.source] = label
        m = replace(m, group=group)
        known = _BY_KEY.get((m.source, m.name))
        if known is not None:
            if known != m:
                raise ValueError(f"metric {m.name!r} of source {m.source!r} is registered already")
            out.append(known)
            continue
        if (m.scope == "host" and m.name in _HOST) or (m.scope == "node" and m.name in _NODE):
            raise ValueError(f"a {m.scope} metric {m.name!r} is registered already")
        _groups[group].append(m)
        _BY_KEY[(m.source, m.name)] = m
        if m.scope == "host":
            _HOST[m.name] = m
        elif m.scope == "node":
            _NODE[m.name] = m
        out.append(m)
    for export, text in (export_help or {}).items():
        for m in metrics:
            if m.export == export:
                _EXPORT_HELP.setdefault(export, {})[m.source] = text
    _entries = tuple(m for g in GROUPS for m in _groups[g])
    _ORDER.clear()
    _ORDER.update((m, i) for i, m in enumerate(_entries))
    return tuple(out)


def registry() -> tuple[Metric, ...]:
    """Every registered metric, in display order (groups in :data:`GROUPS` order)."""
    return _entries


register(
    HOST,
    Metric(
        "host",
        "rss",
        "bytes",
        "rss",
        "RSS",
        SERIES,
        scope="host",
        export="host_rss_bytes",
        color="#64748b",
    ),
    Metric(
        "host",
        "sys_used",
        "bytes",
        "system",
        "system used",
        scope="host",
        export="host_memory_used_bytes",
    ),
    Metric(
        "host",
        "sys_available",
        "bytes",
        "system",
        "system available",
        scope="host",
        export="host_memory_available_bytes",
    ),
)
# Other nodes' GPUs, from a Prometheus server (the DCGM exporter's metrics, or those of
# nbgpumon's exporter on other kernels): the cluster timeline's columns, node_column()
register(
    NODE,
    _node("mem_used", "bytes", "memory", "used", SERIES, "#3b82f6"),
    _node("mem_total", "bytes", "memory", "total", LIMIT),
    _node("gpu_util", "percent", "util", "GPU", SERIES, "#8b5cf6"),
    _node("power", "watts", "power", "power"),
    _node("temperature", "celsius", "temperature", "temperature"),
    _node("allocated", "bytes", "memory", "allocated (nbgpumon)"),
)  # fmt: skip

EXPORT_PREFIX = "nbgpumon_"  # every exported family's name starts so


def source_label(source: str) -> str:
    """A source's name as its users spell it: ``"JAX"`` for ``"jax"``."""
    return _LABELS.get(source, source)


def export_help(export: str) -> tuple[str, ...]:
    """What each source that fills the export family ``export`` said of its figure there
    (``register``'s ``export_help``), in registration order; () when none did."""
    return tuple(_EXPORT_HELP.get(export, {}).values())


def device_label() -> str:
    """How users write the default device source ("NVML": the first registered in the DEVICE
    group), for words about the device's own figures; "" when none is registered."""
    devices = sources_in(DEVICE)
    return source_label(devices[0]) if devices else ""


def sources_in(group: str) -> tuple[str, ...]:
    """The sources whose metrics ``group`` holds, in registration order (FRAMEWORK: the
    framework plug-ins registered so far)."""
    return tuple(dict.fromkeys(m.source for m in _groups.get(group, ())))


def display_order(m: Metric) -> int:
    """Where ``m`` stands in the registry: panels and their lines are shown in this order."""
    return _ORDER.get(m, len(_ORDER))


def metrics_of(source: str) -> tuple[Metric, ...]:
    """The metrics ``source`` reads, in registry order."""
    return tuple(m for m in _entries if m.source == source)


def metric_of(column: str) -> Metric | None:
    """The metric a timeline column holds (``gpu0.nvml.mem_used``, ``host.rss``,
    ``node:node-1.gpu0.mem_used``); None for a column the registry does not know."""
    if column.startswith("node:"):
        parts = column.rsplit(".", 2)
        return _NODE.get(parts[-1]) if len(parts) == 3 else None
    parts = column.split(".")
    if len(parts) == 2 and parts[0] == "host":
        return _HOST.get(parts[1])
    if len(parts) == 3 and parts[0].startswith("gpu"):
        return _BY_KEY.get((parts[1], parts[2]))
    return None


def device_role(column: str) -> str:
    """What a device source's column holds, by role (``"mem_used"`` for ``gpu0.nvml.mem_used``:
    whichever source reads it), or "" for any other column."""
    m = metric_of(column)
    return m.name if m is not None and m.group == DEVICE else ""


def device_of(column: str) -> int | None:
    """The device index of a ``gpu{i}.…`` column; None for a host or a remote node's column."""
    head = column.split(".", 1)[0]
    return int(head[3:]) if head.startswith("gpu") and head[3:].isdigit() else None


def node_of(column: str) -> tuple[str, str] | None:
    """(host, gpu) of a cluster column ``node:{host}.{gpu}.{metric}``; None for another."""
    if not column.startswith("node:"):
        return None
    parts = column[len("node:") :].rsplit(".", 2)
    return (parts[0], parts[1]) if len(parts) == 3 else None


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
        elif m.scope == "node":
            host, gpu = node_of(column) or ("", "")
            out.append({**m.describe(None), "name": column, "node": host, "gpu": gpu})
        else:
            out.append(m.describe(device_of(column)))
    return out
