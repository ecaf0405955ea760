"""torch's metrics: its CUDA caching allocator's counters, per GPU."""

from __future__ import annotations

from ...._foundation.metrics import FRAMEWORK, SERIES, Metric, register

LABEL = "torch"  # how its users write it

# fmt: off
METRICS = register(
    FRAMEWORK,
    Metric("torch", "reserved", "bytes", "memory", "reserved", SERIES,
           export="allocator_reserved_bytes", color="#f59e0b"),
    Metric("torch", "allocated", "bytes", "memory", "allocated", SERIES,
           export="allocator_allocated_bytes", color="#10b981"),
    Metric("torch", "active", "bytes", "memory", "active (torch)",
           export="allocator_active_bytes"),
    Metric("torch", "inactive_split", "bytes", "memory", "fragmented (torch)",
           export="allocator_inactive_split_bytes"),
    # its peak counter (AllocatorStats.peak_allocated): exported and recorded, not drawn; it
    # restarts at each cell in peak_mode "reset"
    Metric("torch", "peak", "bytes", "memory", "peak (torch)", export="allocator_peak_bytes"),
    label=LABEL,
    export_help={
        "allocator_active_bytes": "torch allocator: bytes in active blocks",
        "allocator_inactive_split_bytes": "torch allocator: reserved bytes unusable for large "
        "requests (fragmentation)",
        "allocator_peak_bytes": "torch's since the running cell began (peak_mode reset)",
    },
)
# fmt: on
