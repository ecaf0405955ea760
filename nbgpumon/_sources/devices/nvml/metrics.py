"""NVML's metrics, one row each: the device's own view of each GPU, in the registry's DEVICE
group. A row is a metric's declaration, its cadence, the read it comes from (with its reader in
``reads``, at the detail and slow cadences) and the reads whose disabling leaves it no value;
everything NVML's source indexes or checks is derived from the rows (``rows.layout``)."""

from __future__ import annotations

from ...._foundation.metrics import DEVICE, LIMIT, SERIES, Metric, register
from ...base import DETAIL, FAST, SLOW
from . import reads
from .rows import NvmlMetric

SOURCE = "nvml"  # its columns' middle name (gpu0.nvml.mem_used): stored in recordings, keep it
LABEL = "NVML"  # how its users write it


def _metric(
    name: str,
    unit: str,
    panel: str,
    label: str,
    chart: str = "",
    export: str = "",
    color: str = "",
) -> Metric:
    return Metric(SOURCE, name, unit, panel, label, chart, export=export, color=color)


# The order is the display order: a panel's lines, and a source's columns, follow it.
ROWS = (
    NvmlMetric(
        _metric(
            "mem_used", "bytes", "memory", "used (NVML)", SERIES, "gpu_memory_used_bytes",
            "#3b82f6",
        ),
        FAST,
        "memory",  # v2 first; v1 still gives used and total
    ),
    NvmlMetric(
        _metric(
            "mem_reserved", "bytes", "memory", "reserved by the driver",
            export="gpu_memory_reserved_bytes",
        ),
        FAST,
        "memory_v2",
        unavailable_with=("memory_v2", "memory"),
    ),
    NvmlMetric(
        _metric("mem_total", "bytes", "memory", "total", LIMIT, "gpu_memory_total_bytes"),
        FAST,
        "memory",
    ),
    NvmlMetric(
        _metric("gpu_util", "percent", "util", "GPU", SERIES, "gpu_utilization_ratio", "#8b5cf6"),
        FAST,
        "utilization",  # NotSupported on a MIG device
    ),
    NvmlMetric(
        _metric(
            "mem_util", "percent", "util", "memory", SERIES, "gpu_memory_utilization_ratio",
            "#06b6d4",
        ),
        FAST,
        "utilization",
    ),
    NvmlMetric(
        _metric("power", "watts", "power", "power", SERIES, "gpu_power_watts", "#ef4444"),
        DETAIL,
        "power",
        reads.power,
    ),
    NvmlMetric(
        _metric("power_limit", "watts", "power", "power limit", export="gpu_power_limit_watts"),
        SLOW,
        "power_limit",
        reads.power_limit,
    ),
    NvmlMetric(
        _metric(
            "temperature", "celsius", "temperature", "temperature", SERIES,
            "gpu_temperature_celsius", "#ec4899",
        ),
        DETAIL,
        "temperature",
        reads.temperature,
    ),
    NvmlMetric(
        _metric("sm_clock", "MHz", "clock", "SM clock", export="gpu_sm_clock_hertz"),
        DETAIL,
        "sm_clock",
        reads.sm_clock,
    ),
    NvmlMetric(
        _metric(
            "pcie_tx", "bytes/s", "pcie", "PCIe sent", export="gpu_pcie_transmit_bytes_per_second"
        ),
        DETAIL,
        "pcie",  # one call gives both counters: reads.pcie returns (sent, received)
        reads.pcie,
    ),
    NvmlMetric(
        _metric(
            "pcie_rx", "bytes/s", "pcie", "PCIe received",
            export="gpu_pcie_receive_bytes_per_second",
        ),
        DETAIL,
        "pcie",
        reads.pcie,
    ),
)  # fmt: skip
METRICS = register(DEVICE, *(row.metric for row in ROWS), label=LABEL)
