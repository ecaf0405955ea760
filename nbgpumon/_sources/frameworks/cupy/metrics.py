"""CuPy's metrics: its default memory pool on each GPU ("reserved" is ``total_bytes()``,
"allocated" ``used_bytes()``)."""

from __future__ import annotations

from ...._foundation.metrics import FRAMEWORK, SERIES, Metric, register

LABEL = "CuPy"  # how its users write it

# fmt: off
METRICS = register(
    FRAMEWORK,
    Metric("cupy", "reserved", "bytes", "memory", "pool (CuPy)", SERIES,
           export="allocator_reserved_bytes", color="#eab308"),
    Metric("cupy", "allocated", "bytes", "memory", "in use (CuPy)", SERIES,
           export="allocator_allocated_bytes", color="#84cc16"),
    # a peak only with GPUMon.cupy_peak_hook (a memory hook on the kernel's thread)
    Metric("cupy", "peak", "bytes", "memory", "peak (CuPy)", export="allocator_peak_bytes"),
    label=LABEL,
    export_help={"allocator_peak_bytes": "CuPy's with its peak hook"},
)
# fmt: on
