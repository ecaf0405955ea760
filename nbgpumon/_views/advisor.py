"""``%gpumon advise``: hints drawn from what was measured, each citing the numbers behind it.

Every rule looks for its own evidence in the samples and the ledger and stays silent without
it: no generic advice. The evidence comes from the live monitor or from a recording, through
one :class:`Evidence` shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._foundation.metrics import device_of, device_role, metric
from .._foundation.units import format_bytes, format_percent, format_seconds
from .._ledger.records import CellRecord
from .._session.data import SessionData

GIB = 2**30
FRAGMENTED_BYTES = GIB  # reserved - allocated at least this much ...
FRAGMENTED_SHARE = 0.25  # ... and at least this share of reserved
BUSY_CELL_SECONDS = 10.0  # cells at least this long count as "running work"
IDLE_UTIL = 60.0  # mean GPU utilization below this, in such a cell, is waiting
NEAR_LIMIT = 0.90  # device memory in use over total
GROWING_MIN = 16 * 2**20  # a re-run must keep at least this much to count as growth
PREALLOCATED_IDLE = 4 * GIB  # JAX's pool at least this far above its arrays ...
PREALLOCATED_SHARE_OF_USE = 4  # ... and at least 4× what they use


@dataclass(frozen=True)
class Hint:
    topic: str  # "fragmentation", "input pipeline", "memory limit", "JAX preallocation", ...
    evidence: str  # the numbers that triggered it
    advice: str  # what to do

    def __str__(self) -> str:
        return f"{self.topic}: {self.evidence}\n  → {self.advice}"


@dataclass
class Evidence:
    """What the rules read: the samples, the ledger, and what only a live kernel can say."""

    columns: list[str]
    times: np.ndarray  # unix seconds
    values: np.ndarray  # (samples, columns), NaN where missing
    records: list[CellRecord]
    gpus: list[tuple[int, str]]  # (nvml index, name)
    alloc_retries: dict[int, int] = field(default_factory=dict)  # live only: by NVML index
    fp32_modules: list[str] | None = None  # live only: modules with float32 parameters

    def device_column(self, role: str, device: int) -> np.ndarray | None:
        """The device source's ``role`` column ("mem_used") of GPU ``device``, if sampled."""
        for name in self.columns:
            if device_of(name) == device and device_role(name) == role:
                return self.column(name)
        return None

    def column(self, name: str) -> np.ndarray | None:
        try:
            return self.values[:, self.columns.index(name)]
        except ValueError:
            return None


# -- the rules ------------------------------------------------------------------------------
def fragmentation(ev: Evidence) -> list[Hint]:
    hints = []
    for index, name in ev.gpus:
        reserved = ev.column(metric("torch", "reserved").column(index))
        allocated = ev.column(metric("torch", "allocated").column(index))
        if reserved is None or allocated is None:
            continue
        gap = reserved - allocated
        valid = ~np.isnan(gap) & (reserved > 0)
        retries = ev.alloc_retries.get(index, 0)
        if not valid.any() and not retries:
            continue
        worst = int(np.argmax(np.where(valid, gap, -np.inf))) if valid.any() else None
        big = (
            worst is not None
            and gap[worst] >= FRAGMENTED_BYTES
            and gap[worst] >= FRAGMENTED_SHARE * reserved[worst]
        )
        if not big and not retries:
            continue
        facts = []
        if worst is not None and big:
            share = gap[worst] / reserved[worst]
            facts.append(
                f"torch held {format_bytes(reserved[worst])} but only "
                f"{format_bytes(allocated[worst])} was in tensors "
                f"({format_bytes(gap[worst])}, {share:.0%} of it idle)"
                f"{_during(ev, float(ev.times[worst]))}"
            )
        split = ev.column(metric("torch", "inactive_split").column(index))
        if split is not None and not np.isnan(split).all() and np.nanmax(split) >= FRAGMENTED_BYTES:
            facts.append(f"up to {format_bytes(np.nanmax(split))} in split blocks")
        if retries:
            plural = "y" if retries == 1 else "ies"
            facts.append(f"{retries} allocator retr{plural} (cudaMalloc failed, cache flushed)")
        hints.append(
            Hint(
                "fragmentation",
                f"gpu{index} {name}: " + "; ".join(facts),
                "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before torch starts "
                "(restart the kernel); or max_split_size_mb:<MB> to stop large blocks being "
                "split, or garbage_collection_threshold:0.8 to reclaim cached blocks earlier",
            )
        )
    return hints


def input_pipeline(ev: Evidence) -> list[Hint]:
    waiting = [
        r
        for r in ev.records
        if r.kind == "cell"
        and r.duration >= BUSY_CELL_SECONDS
        and r.util_mean is not None
        and r.util_mean < IDLE_UTIL
        and ((r.allocated_total or 0) > 0 or (r.peak_allocated or 0) > 0)  # it did GPU work
    ]
    if not waiting:
        return []
    shown = ", ".join(
        f"{r.name} ran {format_seconds(r.duration)} at {format_percent(r.util_mean)} GPU"
        for r in waiting[:3]
    )
    more = f" (and {len(waiting) - 3} more)" if len(waiting) > 3 else ""
    return [
        Hint(
            "input pipeline",
            f"the GPU was idle much of the time while cells worked: {shown}{more}",
            "feed it faster: DataLoader(num_workers=4 or more, pin_memory=True, "
            "persistent_workers=True), move preprocessing to the GPU, or a larger batch",
        )
    ]


def memory_limit(ev: Evidence) -> list[Hint]:
    hints = []
    for index, name in ev.gpus:
        used, total = ev.device_column("mem_used", index), ev.device_column("mem_total", index)
        if used is None or total is None:
            continue
        share = used / total
        if np.isnan(share).all() or np.nanmax(share) < NEAR_LIMIT:
            continue
        worst = int(np.nanargmax(share))
        evidence = (
            f"gpu{index} {name}: {format_bytes(used[worst])} of {format_bytes(total[worst])} "
            f"in use ({share[worst]:.0%}){_during(ev, float(ev.times[worst]))}"
        )
        if ev.fp32_modules:
            evidence += f"; {', '.join(ev.fp32_modules[:3])} train in float32"
            advice = (
                "mixed precision: torch.autocast('cuda', dtype=torch.bfloat16) around the "
                "forward pass (about half the activation memory), or gradient accumulation "
                "over smaller batches"
            )
        else:
            advice = (
                "gradient accumulation over smaller batches, or mixed precision "
                "(torch.autocast) if you train in float32; %gpumon holders shows what holds it"
            )
        hints.append(Hint("memory limit", evidence, advice))
    return hints


def rerun_growth(ev: Evidence) -> list[Hint]:
    runs: dict[str, list[CellRecord]] = {}
    for r in ev.records:
        if r.kind == "cell" and r.label:
            runs.setdefault(r.cell_id or r.label, []).append(r)
    hints = []
    for same in runs.values():
        if len(same) < 2:
            continue
        kept = [_kept(r) for r in same]
        if any(k is None or k < GROWING_MIN for k in kept):
            continue
        where = "GPU" if same[0].retained is not None else "host"
        holders = next((r.retention for r in reversed(same) if r.retention), None)
        held = (
            "; held by " + ", ".join(f"{n} {format_bytes(b)}" for n, b in holders.holders)
            if holders and holders.holders
            else ""
        )
        hints.append(
            Hint(
                "re-run growth",
                f"{same[0].label!r} ran {len(same)} times ({', '.join(r.name for r in same)}) "
                f"and each run kept more {where} memory: "
                f"{', '.join(format_bytes(k) for k in kept)} ({format_bytes(sum(kept))} in all)"
                f"{held}",
                "something outlives each run (a list appended to, Out[N], a global cache): "
                "%gpumon holders names it; %gpumon free drops outputs and tracebacks",
            )
        )
    return hints


def _idle_pool(ev: Evidence, framework: str, index: int) -> tuple[int, float, float] | None:
    """(sample, pool bytes, in-use bytes) where ``framework``'s pool on GPU ``index`` held the
    most it did not use; None without its columns."""
    pool = ev.column(metric(framework, "reserved").column(index))
    used = ev.column(metric(framework, "allocated").column(index))
    if pool is None or used is None or not np.isfinite(pool).any():
        return None
    idle = np.where(np.isfinite(pool) & np.isfinite(used), pool - used, -np.inf)
    worst = int(np.argmax(idle))
    return worst, float(pool[worst]), float(used[worst])


def jax_preallocation(ev: Evidence) -> list[Hint]:
    hints = []
    for index, name in ev.gpus:
        pool = ev.column(metric("jax", "reserved").column(index))
        used = ev.column(metric("jax", "allocated").column(index))
        if pool is None or used is None or not np.isfinite(pool).any():
            continue
        at = int(np.nanargmax(pool))
        most_pool, most_used = float(pool[at]), float(np.nanmax(used))
        if most_pool - most_used < PREALLOCATED_IDLE:
            continue
        if most_pool < PREALLOCATED_SHARE_OF_USE * max(most_used, 1):
            continue
        hints.append(
            Hint(
                "JAX preallocation",
                f"gpu{index} {name}: JAX's pool held {format_bytes(most_pool)} while its "
                f"arrays used at most {format_bytes(most_used)}",
                "JAX takes 75% of the GPU when it starts: set XLA_PYTHON_CLIENT_PREALLOCATE="
                "false (the pool grows as needed) or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION "
                "(e.g. .3) before jax starts (restart the kernel) when torch, CuPy or another "
                "process needs the memory",
            )
        )
    return hints


def cupy_pool_cache(ev: Evidence) -> list[Hint]:
    hints = []
    for index, name in ev.gpus:
        found = _idle_pool(ev, "cupy", index)
        if found is None:
            continue
        at, pool, used = found
        if pool - used < FRAGMENTED_BYTES or pool - used < FRAGMENTED_SHARE * pool:
            continue
        hints.append(
            Hint(
                "CuPy pool cache",
                f"gpu{index} {name}: CuPy's pool cached {format_bytes(pool - used)} of freed "
                f"blocks (live arrays: {format_bytes(used)}){_during(ev, float(ev.times[at]))}; "
                "NVML counts it as used, but it is not a leak",
                "cupy.get_default_memory_pool().free_all_blocks() (or %gpumon free) gives it "
                "back to the driver; it matters only when another framework or process needs it",
            )
        )
    return hints


RULES = (
    fragmentation, input_pipeline, memory_limit, rerun_growth, jax_preallocation, cupy_pool_cache
)  # fmt: skip


def advise(ev: Evidence) -> list[Hint]:
    """Every hint the evidence supports, in rule order."""
    return [hint for rule in RULES for hint in rule(ev)]


# -- evidence from the live monitor or a recording ------------------------------------------
def evidence(
    data: SessionData,
    alloc_retries: dict[int, int] | None = None,
    fp32_modules: list[str] | None = None,
) -> Evidence:
    """What the rules read from a session, live or recorded; the live-only facts (allocator
    retries, modules in float32) come from the caller, which can ask the kernel."""
    window = data.window()
    return Evidence(
        columns=list(data.columns),
        times=window.times,
        values=window.high.astype(np.float64),  # bucket maxima: a peak must not average away
        records=list(data.records),
        gpus=[(d.index, d.name) for d in data.devices],
        alloc_retries=dict(alloc_retries or {}),
        fp32_modules=fp32_modules,
    )


def recorded_evidence(session: SessionData) -> Evidence:
    return evidence(session)


def _kept(r: CellRecord) -> int | None:
    return r.retained if r.retained is not None else r.rss_delta


def _during(ev: Evidence, t: float) -> str:
    for r in ev.records:
        if r.kind == "cell" and r.start <= t <= r.start + r.duration:
            return f" during {r.name}"
    return ""


def hints_text(hints: Sequence[Hint]) -> str:
    if not hints:
        return (
            "nbgpumon advise: nothing to suggest: no fragmentation, idle GPU in long cells, "
            "memory near the limit, re-runs that keep growing, JAX preallocation or a large "
            "CuPy pool cache in what was measured"
        )
    return "\n".join(f"{n}. {hint}" for n, hint in enumerate(hints, 1))
