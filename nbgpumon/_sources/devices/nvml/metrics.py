"""NVML's metrics: the device's own view of each GPU, in the registry's DEVICE group."""

from __future__ import annotations

from ...._foundation.metrics import DEVICE, LIMIT, SERIES, Metric, register

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
METRICS = register(
    DEVICE,
    _metric(
        "mem_used",
        "bytes",
        "memory",
        "used (NVML)",
        SERIES,
        "gpu_memory_used_bytes",
        "#3b82f6",
    ),
    _metric(
        "mem_reserved",
        "bytes",
        "memory",
        "reserved by the driver",
        export="gpu_memory_reserved_bytes",
    ),
    _metric("mem_total", "bytes", "memory", "total", LIMIT, "gpu_memory_total_bytes"),
    _metric("gpu_util", "percent", "util", "GPU", SERIES, "gpu_utilization_ratio", "#8b5cf6"),
    _metric(
        "mem_util",
        "percent",
        "util",
        "memory",
        SERIES,
        "gpu_memory_utilization_ratio",
        "#06b6d4",
    ),
    _metric("power", "watts", "power", "power", SERIES, "gpu_power_watts", "#ef4444"),
    _metric("power_limit", "watts", "power", "power limit", export="gpu_power_limit_watts"),
    _metric(
        "temperature",
        "celsius",
        "temperature",
        "temperature",
        SERIES,
        "gpu_temperature_celsius",
        "#ec4899",
    ),
    _metric("sm_clock", "MHz", "clock", "SM clock", export="gpu_sm_clock_hertz"),
    _metric(
        "pcie_tx",
        "bytes/s",
        "pcie",
        "PCIe sent",
        export="gpu_pcie_transmit_bytes_per_second",
    ),
    _metric(
        "pcie_rx",
        "bytes/s",
        "pcie",
        "PCIe received",
        export="gpu_pcie_receive_bytes_per_second",
    ),
    label=LABEL,
)
