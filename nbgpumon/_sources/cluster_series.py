"""What the GPU series of a Prometheus answer say, as cluster columns.

Two exporters are understood: NVIDIA's DCGM exporter (``DCGM_FI_DEV_*``, framebuffer sizes in
MiB, labels ``gpu``, ``UUID``, ``modelName``, ``Hostname``, MIG's ``GPU_I_ID`` and
``GPU_I_PROFILE``, Kubernetes' ``pod`` and ``namespace``) and nbgpumon's own (``nbgpumon_*``,
base units, the same label names). A GPU is keyed by host and index (``gpu0``, ``gpu0-mig3``);
where both exporters report one metric of one GPU, the DCGM exporter's value is kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .._foundation.metrics import EXPORT_PREFIX, metric
from .base import NodeReading
from .prometheus_http import Series

MIB = 2**20

# series name -> (cluster metric, factor to the registry's unit)
DCGM = {
    "DCGM_FI_DEV_FB_USED": ("mem_used", MIB),
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", 1.0),
}
DCGM_FREE, DCGM_RESERVED = "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"  # for the total
NBGPUMON = {
    f"{EXPORT_PREFIX}gpu_memory_used_bytes": ("mem_used", 1.0),
    f"{EXPORT_PREFIX}gpu_memory_total_bytes": ("mem_total", 1.0),
    f"{EXPORT_PREFIX}gpu_utilization_ratio": ("gpu_util", 100.0),
    f"{EXPORT_PREFIX}gpu_power_watts": ("power", 1.0),
    f"{EXPORT_PREFIX}gpu_temperature_celsius": ("temperature", 1.0),
}
NBGPUMON_ALLOCATED = f"{EXPORT_PREFIX}allocator_allocated_bytes"  # summed over frameworks
SERIES_NAMES = (*DCGM, DCGM_FREE, DCGM_RESERVED, *NBGPUMON, NBGPUMON_ALLOCATED)

# label -> what RemoteGpu calls it
_INFO_LABELS = {"modelName": "model", "UUID": "uuid", "pod": "pod", "namespace": "namespace"}


def gpu_key(labels: dict[str, str], host_label: str = "Hostname") -> tuple[str, str] | None:
    """(host, gpu) of a series, or None when it names no GPU: the host is the ``host_label``
    label's value, else ``Hostname``'s, else the scrape target's host."""
    host = (
        labels.get(host_label)
        or labels.get("Hostname")
        or _instance_host(labels.get("instance", ""))
    )
    index = labels.get("gpu", "")
    if not host or not index.isdigit():
        return None
    mig = labels.get("GPU_I_ID", "")
    return host, f"gpu{index}-mig{mig}" if mig.isdigit() else f"gpu{index}"


def _instance_host(instance: str) -> str:
    """``node-1:9400`` -> ``node-1``; ``[::1]:9400`` -> ``::1``."""
    if instance.startswith("["):
        return instance[1:].partition("]")[0]
    return instance.rpartition(":")[0] if instance.count(":") == 1 else instance


def reading_from(
    time: float, series: Iterable[Series], host_label: str = "Hostname"
) -> NodeReading:
    """One instant's series (their last points) as cluster columns and GPU labels, each GPU
    under the host its ``host_label`` label names (:func:`gpu_key`)."""
    values: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    dcgm: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    allocated: dict[tuple[str, str], float] = defaultdict(float)
    gpus: dict[tuple[str, str], dict[str, str]] = {}
    for s in series:
        if not s.points:
            continue
        key = gpu_key(s.labels, host_label)
        name = s.labels.get("__name__", "")
        if key is None or name not in SERIES_NAMES:
            continue
        value = s.points[-1][1]
        info = gpus.setdefault(key, {})
        info.update({ours: s.labels[theirs] for theirs, ours in _INFO_LABELS.items()
                     if s.labels.get(theirs)})  # fmt: skip
        if s.labels.get("GPU_I_PROFILE"):
            info["mig_profile"] = s.labels["GPU_I_PROFILE"]
        if name.startswith("DCGM_"):
            info["origin"] = "dcgm"  # DCGM names the GPU when both do
            dcgm[key][name] = value
            if name in DCGM:
                field, factor = DCGM[name]
                values[key][field] = value * factor
        else:
            info.setdefault("origin", "nbgpumon")
            if name == NBGPUMON_ALLOCATED:
                allocated[key] += value
            else:
                field, factor = NBGPUMON[name]
                values[key].setdefault(field, value * factor)  # DCGM's first, if it came first
    for key, raw in dcgm.items():
        used, free = raw.get("DCGM_FI_DEV_FB_USED"), raw.get(DCGM_FREE)
        if used is not None and free is not None:
            values[key]["mem_total"] = (used + free + raw.get(DCGM_RESERVED, 0.0)) * MIB
        for name, (field, factor) in DCGM.items():  # DCGM's value wins over nbgpumon's
            if name in raw:
                values[key][field] = raw[name] * factor
    for key, total in allocated.items():
        values[key]["allocated"] = total
    columns = {
        metric("cluster", field).node_column(*key): value
        for key, fields in values.items()
        for field, value in fields.items()
    }
    return NodeReading(time, columns, gpus)


def readings_over_time(series: Iterable[Series], host_label: str = "Hostname") -> list[NodeReading]:
    """A range query's series as one reading per evaluation time, oldest first."""
    at: dict[float, list[Series]] = defaultdict(list)
    for s in series:
        for t, v in s.points:
            at[t].append(Series(s.labels, ((t, v),)))
    return [reading_from(t, group, host_label) for t, group in sorted(at.items())]
