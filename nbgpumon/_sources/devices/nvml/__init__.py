"""NVML's device source reads NVIDIA's management library, the device's own view (memory,
utilization, power, clocks, PCIe, processes, MIG devices, the CUDA numbering). Importing it
registers its metrics and, with the line below, itself; nothing outside ``_sources/devices/``
imports this package."""

from __future__ import annotations

from ..registry import DevicePlugin, register_device_source
from .metrics import LABEL, METRICS, ROWS, SOURCE
from .source import NOT_ANSWERING_AFTER, NvmlSource

register_device_source(DevicePlugin(SOURCE, LABEL, NvmlSource, {r.name: r.cadence for r in ROWS}))

__all__ = ["LABEL", "METRICS", "NOT_ANSWERING_AFTER", "SOURCE", "NvmlSource"]
