"""The process split of each GPU's memory: this kernel's process, its children, everyone else
(the device source's process list, summed), in the registry's PROCESS group."""

from __future__ import annotations

from ..._foundation.metrics import PROCESS, SERIES, Metric, register

SOURCE = "procs"  # its columns' middle name (gpu0.procs.children_mem): stored in recordings
LABEL = "processes"

METRICS = register(
    PROCESS,
    Metric(
        SOURCE, "kernel_mem", "bytes", "memory", "this kernel", SERIES,
        export="kernel_gpu_memory_bytes", color="#14b8a6",
    ),
    Metric(
        SOURCE, "children_mem", "bytes", "memory", "its children", SERIES,
        export="children_gpu_memory_bytes", color="#f97316",
    ),
    Metric(
        SOURCE, "others_mem", "bytes", "memory", "other processes", SERIES,
        export="other_processes_gpu_memory_bytes", color="#94a3b8",
    ),
    label=LABEL,
    export_help={
        "kernel_gpu_memory_bytes": "GPU memory this kernel's own process holds",
        "children_gpu_memory_bytes": "GPU memory held by processes this kernel started",
        "other_processes_gpu_memory_bytes": "GPU memory held by every other process",
    },
)  # fmt: skip
