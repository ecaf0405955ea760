"""JAX's metrics: XLA's BFC pool on each GPU, whose "reserved" is the pool it holds from the
driver (preallocation makes it 75% of the GPU)."""

from __future__ import annotations

from ...._foundation.metrics import FRAMEWORK, SERIES, Metric, register

LABEL = "JAX"  # how its users write it

# fmt: off
METRICS = register(
    FRAMEWORK,
    Metric("jax", "reserved", "bytes", "memory", "pool (JAX)", SERIES,
           export="allocator_reserved_bytes", color="#a855f7"),
    Metric("jax", "allocated", "bytes", "memory", "in use (JAX)", SERIES,
           export="allocator_allocated_bytes", color="#0ea5e9"),
    # its peak counts from the process's start: it cannot be reset
    Metric("jax", "peak", "bytes", "memory", "peak (JAX)", export="allocator_peak_bytes"),
    label=LABEL,
    export_help={"allocator_peak_bytes": "JAX's since the process started"},
)
# fmt: on
