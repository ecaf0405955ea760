"""The toy's metrics, in the registry's DEVICE group: the roles the session, the ledger and the
views ask a device source for are mem_used (the ledger's device memory), mem_total (the chart's
ceiling) and gpu_util; fan_speed is one of its own, read at the detail cadence."""

from __future__ import annotations

from nbgpumon._foundation.metrics import DEVICE, LIMIT, SERIES, Metric, register
from nbgpumon._sources.base import DETAIL

SOURCE = "toy"  # GPUMon.device_source's value, and its columns' middle name (gpu0.toy.…)
LABEL = "Toy"
GIB = 2**30

METRICS = register(
    DEVICE,
    Metric(SOURCE, "mem_used", "bytes", "memory", "used (Toy)", SERIES,
           export="gpu_memory_used_bytes"),
    Metric(SOURCE, "mem_total", "bytes", "memory", "total", LIMIT,
           export="gpu_memory_total_bytes"),
    Metric(SOURCE, "gpu_util", "percent", "util", "GPU", SERIES, export="gpu_utilization_ratio"),
    Metric(SOURCE, "fan_speed", "percent", "fan", "toy fan", SERIES,
           export="gpu_fan_speed_ratio"),
    label=LABEL,
)  # fmt: skip
# what is not read every tick (the registration says it: status words it so)
CADENCES = {"fan_speed": DETAIL}
