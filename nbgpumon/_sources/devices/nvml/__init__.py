"""NVML's device source: NVIDIA's management library, the device's own view (memory,
utilization, power, clocks, PCIe, processes, MIG devices, the CUDA numbering). Importing it
registers its metrics; nothing outside this package names NVML."""

from __future__ import annotations

from .metrics import LABEL, METRICS, SOURCE
from .source import NOT_ANSWERING_AFTER, NvmlSource

__all__ = ["LABEL", "METRICS", "NOT_ANSWERING_AFTER", "SOURCE", "NvmlSource"]
