"""What torch's counters mean for the ledger, status, ``fit`` and the outcome of a cell. Its peak
counter is reset per cell (``torch.cuda.reset_peak_memory_stats``) in peak_mode "reset", and
``set_per_process_memory_fraction`` caps what it may reserve."""

from __future__ import annotations

from ...base import AllocatorSource, AllocatorStats

RESET_MEANS = "torch.cuda.max_memory_allocated() counts from the current cell's start"
PRESERVE_MEANS = "torch's counters untouched"
TRACED_AS = "torch's memory history"
RESET_NOTICE = (
    "torch's peak memory counters now restart at each cell, for exact per-cell peaks "
    "(%config GPUMon.peak_mode = 'preserve' leaves them alone)"
)
CAP_NAME = "torch.cuda.set_per_process_memory_fraction"


def peak_note(source: AllocatorSource, peak_mode: str) -> str:
    """How exact a cell's torch peak is under ``peak_mode``."""
    if peak_mode != "reset":
        return "per-cell peaks exact when a cell sets a new high (peak_mode 'preserve')"
    return "per-cell peaks exact (torch's counter, reset at each cell)"


def why_sampled(peak_mode: str) -> str:
    if peak_mode == "preserve":
        return "torch's peak counter is not reset per region: %config GPUMon.peak_mode = 'reset'"
    return ""


def memory_cap(source: AllocatorSource, stats: AllocatorStats, cuda_index: int) -> int | None:
    """The per-process memory fraction's bytes (torch reports no limit with its stats)."""
    return source.memory_cap(cuda_index)  # type: ignore[attr-defined]
