"""``%gpumon advise``'s analysis: findings drawn from what was measured, as data.

Every rule looks for its own evidence in the samples and the ledger and stays silent without
it: no generic advice. The generic rules (an idle GPU in long cells, memory near the limit,
re-runs that keep growing) are here; each framework plug-in adds its pool hints as data
(``Framework.pool_advice``), tested here against its columns. The evidence comes from the
live monitor or from a recording, through one :class:`Evidence` shape; ``_views/words/advice.py``
puts the findings into words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._foundation.metrics import device_of, device_role, metric
from ..._ledger.measured_fixes import MeasuredFix, measured_fixes
from ..._ledger.records import TRANSIENT, CellRecord
from ..._sources.frameworks import frameworks
from ..._sources.frameworks.advice import PoolAdvice
from ..facts.session_data import SessionData

BUSY_CELL_SECONDS = 10.0  # cells at least this long count as "running work"
IDLE_UTIL = 60.0  # mean GPU utilization below this, in such a cell, is waiting
# ... where the GPU ran kernels at least this busy at some point: a cell that only built a
# model on the host and copied it over (0% throughout) had no input pipeline to feed
BUSY_BURST = 50.0
NEAR_LIMIT = 0.90  # device memory in use over total
GROWING_MIN = 16 * 2**20  # a re-run must keep at least this much to count as growth
# an optimizer's state this many times its parameters' (Adam's two moments: 2×), and at least
# this big, is worth a lighter optimizer or 8-bit states
HEAVY_STATE = 1.5
HEAVY_STATE_MIN = 256 * 2**20
# a cell whose peak is at least this share activations and temporaries (what it freed before
# its end), and at least this many bytes of them, would peak lower with checkpointing,
# autocast or a smaller batch
ACTIVATIONS_SHARE = 0.5
ACTIVATIONS_MIN = 2**30
# the generic rules' places among the plug-ins' (PoolAdvice.rank), and how "nothing to
# suggest" names them
GENERIC_RULES = (
    (20, "idle GPU in long cells"),
    (30, "memory near the limit"),
    (33, "activations dominating a cell's peak"),
    (35, "optimizer state far above the parameters"),
    (40, "re-runs that keep growing"),
)


@dataclass
class Evidence:
    """What the rules read: the samples, the ledger, and what only a live kernel can say."""

    columns: list[str]
    times: np.ndarray  # unix seconds
    values: np.ndarray  # (samples, columns), NaN where missing
    records: list[CellRecord]
    gpus: list[tuple[int, str]]  # (device index, name)
    # live only: allocator retries by framework, then by device index
    alloc_retries: dict[str, dict[int, int]] = field(default_factory=dict)
    fp32_modules: list[str] | None = None  # live only: modules with float32 parameters
    # live only: each GPU's memory by kind now (device index -> the holder scan's categories)
    memory_kinds: dict[int, dict[str, int]] = field(default_factory=dict)
    # what whatif measured of each fix on the user's step, from the ledger's regions
    measured: tuple[MeasuredFix, ...] = ()

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


# -- findings: what a rule found, in numbers -------------------------------------------------
@dataclass(frozen=True)
class PoolFinding:
    """A framework's pool held memory its arrays did not use (the plug-in's words)."""

    words: PoolAdvice
    gpu: int
    gpu_name: str
    pool: float | None = None  # bytes, when the pool test fired
    used: float | None = None
    during: str = ""  # "[7]": the cell the sample fell in
    split: float | None = None  # bytes in split blocks, when worth citing
    retries: int = 0
    framework: str = ""  # the plug-in whose pool it is

    @property
    def topic(self) -> str:
        return self.words.topic


@dataclass(frozen=True)
class IdleGpuFinding:
    """Long cells that did GPU work while the GPU was mostly idle: (name, seconds, util %)."""

    cells: tuple[tuple[str, float, float], ...]  # the first three
    more: int  # how many others
    topic: str = "input pipeline"


@dataclass(frozen=True)
class MemoryLimitFinding:
    """Device memory came near its total on one GPU."""

    gpu: int
    gpu_name: str
    used: float  # bytes
    total: float
    during: str
    full_precision: tuple[str, ...]  # the user's models in float32 (live only)
    precision_evidence: str  # a plug-in's template ({names}), "" for none
    advice: str  # a plug-in's advice, "" for the generic one
    topic: str = "memory limit"


@dataclass(frozen=True)
class RerunFinding:
    """Every run of one cell kept more memory."""

    label: str
    runs: tuple[str, ...]  # "[2]", "[5]", ...
    kept: tuple[int, ...]  # bytes each run kept
    where: str  # "GPU" or "host"
    holders: tuple[tuple[str, int], ...]  # the last run's holders, (name, bytes)
    topic: str = "re-run growth"


@dataclass(frozen=True)
class OptimizerStateFinding:
    """An optimizer's state on one GPU is several times its parameters (live only)."""

    gpu: int
    gpu_name: str
    parameters: int  # bytes
    state: int
    topic: str = "optimizer state"


@dataclass(frozen=True)
class ActivationsFinding:
    """Cells on one GPU whose peak was mostly what they freed before their end."""

    gpu: int
    gpu_name: str
    cell: str  # the one with the most: "[7]"
    peak: int  # its peak, bytes
    transient: int  # of which activations and temporaries
    more: int  # other cells like it on this GPU
    topic: str = "activations"


Finding = (
    PoolFinding
    | IdleGpuFinding
    | MemoryLimitFinding
    | ActivationsFinding
    | OptimizerStateFinding
    | RerunFinding
)


# -- the rules -------------------------------------------------------------------------------
def pool_findings(ev: Evidence, framework: str, words: PoolAdvice) -> list[PoolFinding]:
    """Where ``framework``'s pool (on each GPU) held what ``words`` calls worth a hint."""
    found = []
    for index, name in ev.gpus:
        pool = ev.column(metric(framework, words.pool).column(index))
        used = ev.column(metric(framework, words.used).column(index))
        retries = ev.alloc_retries.get(framework, {}).get(index, 0) if words.retries_evidence else 0
        if pool is None or used is None:
            continue
        hit = _worst(ev, pool, used, words) if words.test == "worst" else _most(pool, used, words)
        if hit is None and not retries:
            continue
        split = None
        column = ev.column(metric(framework, words.split).column(index)) if words.split else None
        if (
            column is not None
            and not np.isnan(column).all()
            and np.nanmax(column) >= words.min_idle
        ):
            split = float(np.nanmax(column))
        pool_bytes, used_bytes, during = hit if hit is not None else (None, None, "")
        found.append(
            PoolFinding(
                words, index, name, pool_bytes, used_bytes, during, split, retries, framework
            )
        )
    return found


def _worst(
    ev: Evidence, pool: np.ndarray, used: np.ndarray, words: PoolAdvice
) -> tuple[float, float, str] | None:
    """The sample where the pool held the most its arrays did not use, when enough."""
    idle = pool - used
    valid = np.isfinite(idle) & (pool > 0)
    if not valid.any():
        return None
    at = int(np.argmax(np.where(valid, idle, -np.inf)))
    if idle[at] < words.min_idle or idle[at] < words.min_share * pool[at]:
        return None
    return float(pool[at]), float(used[at]), _during(ev, float(ev.times[at]))


def _most(pool: np.ndarray, used: np.ndarray, words: PoolAdvice) -> tuple[float, float, str] | None:
    """The pool's largest sample against its arrays' largest, when far enough above."""
    if not np.isfinite(pool).any():
        return None
    most_pool, most_used = float(np.nanmax(pool)), float(np.nanmax(used))
    if most_pool - most_used < words.min_idle:
        return None
    if most_pool < words.min_times * max(most_used, 1):
        return None
    return most_pool, most_used, ""


def input_pipeline(ev: Evidence) -> list[IdleGpuFinding]:
    waiting = [
        r
        for r in ev.records
        if r.kind == "cell"
        and r.duration >= BUSY_CELL_SECONDS
        and r.util_mean is not None
        and r.util_mean < IDLE_UTIL
        and ((r.allocated_total or 0) > 0 or (r.peak_allocated or 0) > 0)  # it did GPU work
        and (r.util_max is None or r.util_max >= BUSY_BURST)  # and ran kernels in bursts
    ]
    if not waiting:
        return []
    cells = tuple((r.name, r.duration, float(r.util_mean or 0)) for r in waiting[:3])
    return [IdleGpuFinding(cells, max(len(waiting) - 3, 0))]


def memory_limit(ev: Evidence) -> list[MemoryLimitFinding]:
    found = []
    precision = next((f.precision_advice for f in frameworks() if f.precision_advice), None)
    for index, name in ev.gpus:
        used, total = (
            ev.device_column("mem_used", index),
            ev.device_column("mem_total", index),
        )
        if used is None or total is None:
            continue
        share = used / total
        if np.isnan(share).all() or np.nanmax(share) < NEAR_LIMIT:
            continue
        worst = int(np.nanargmax(share))
        models = tuple(ev.fp32_modules or ())
        evidence = advice = ""  # (no plug-in's words: the view's generic advice)
        if precision is not None:
            evidence = precision.evidence if models else ""
            advice = precision.advice if models else precision.otherwise
        found.append(
            MemoryLimitFinding(
                index,
                name,
                float(used[worst]),
                float(total[worst]),
                _during(ev, float(ev.times[worst])),
                models,
                evidence,
                advice,
            )
        )
    return found


def activations(ev: Evidence) -> list[ActivationsFinding]:
    """Per GPU, the cells whose peak split (their records' kinds) was ACTIVATIONS_SHARE or
    more activations and temporaries, and at least ACTIVATIONS_MIN of them."""
    found = []
    for index, name in ev.gpus:
        heavy = []
        for r in ev.records:
            for d in r.devices:
                split = d.peak_by_kind if d.index == index else {}
                transient, peak = split.get(TRANSIENT, 0), sum(split.values())
                if transient >= ACTIVATIONS_MIN and transient >= ACTIVATIONS_SHARE * peak:
                    heavy.append((transient, peak, r.name))
        if heavy:
            transient, peak, cell = max(heavy)
            found.append(ActivationsFinding(index, name, cell, peak, transient, len(heavy) - 1))
    return found


def optimizer_state(ev: Evidence) -> list[OptimizerStateFinding]:
    """Where an optimizer's state holds HEAVY_STATE times the parameters or more: now (live),
    else at the newest cell's end whose memory by kind was read."""
    found = []
    for index, name in ev.gpus:
        kinds = ev.memory_kinds.get(index) or _newest_kinds(ev, index)
        params, state = kinds.get("parameters", 0), kinds.get("optimizer state", 0)
        if params and state >= HEAVY_STATE * params and state >= HEAVY_STATE_MIN:
            found.append(OptimizerStateFinding(index, name, params, state))
    return found


def rerun_growth(ev: Evidence) -> list[RerunFinding]:
    runs: dict[str, list[CellRecord]] = {}
    for r in ev.records:
        if r.kind == "cell" and r.label:
            runs.setdefault(r.cell_id or r.label, []).append(r)
    found = []
    for same in runs.values():
        if len(same) < 2:
            continue
        kept = [_kept(r) for r in same]
        if any(k is None or k < GROWING_MIN for k in kept):
            continue
        holders = next((r.retention for r in reversed(same) if r.retention), None)
        found.append(
            RerunFinding(
                same[0].label,
                tuple(r.name for r in same),
                tuple(int(k or 0) for k in kept),
                "GPU" if same[0].retained is not None else "host",
                tuple(holders.holders) if holders else (),
            )
        )
    return found


def _rules() -> list[tuple[int, Any]]:
    """Every rule with its place: the generic ones and each plug-in's pool hints."""
    rules: list[tuple[int, Any]] = [
        (GENERIC_RULES[0][0], input_pipeline),
        (GENERIC_RULES[1][0], memory_limit),
        (GENERIC_RULES[2][0], activations),
        (GENERIC_RULES[3][0], optimizer_state),
        (GENERIC_RULES[4][0], rerun_growth),
    ]
    for plugin in frameworks():
        for words in plugin.pool_advice:
            rules.append((words.rank, _pool_rule(plugin.name, words)))
    rules.sort(key=lambda rule: rule[0])  # (stable: plug-ins of one rank in their order)
    return rules


def _pool_rule(framework: str, words: PoolAdvice) -> Any:
    return lambda ev: pool_findings(ev, framework, words)


def findings(ev: Evidence) -> list[Finding]:
    """Every finding the evidence supports, in rule order."""
    return [found for _, rule in _rules() for found in rule(ev)]


def looked_for() -> list[str]:
    """What the rules look for, in their order, as "nothing to suggest" names it."""
    names = list(GENERIC_RULES)
    names += [(w.rank, w.absent) for f in frameworks() for w in f.pool_advice]
    names.sort(key=lambda n: n[0])
    return [name for _, name in names]


# -- evidence from the live monitor or a recording ------------------------------------------
def evidence(
    data: SessionData,
    alloc_retries: dict[str, dict[int, int]] | None = None,
    fp32_modules: list[str] | None = None,
    memory_kinds: dict[int, dict[str, int]] | None = None,
) -> Evidence:
    """What the rules read from a session, live or recorded; the live-only facts (allocator
    retries, modules in float32) come from the caller, which can ask the kernel."""
    window = data.window()
    records = list(data.records)
    return Evidence(
        columns=list(data.columns),
        times=window.times,
        values=window.high.astype(np.float64),  # bucket maxima: a peak must not average away
        records=records,
        gpus=[(d.index, d.name) for d in data.devices],
        alloc_retries=dict(alloc_retries or {}),
        fp32_modules=fp32_modules,
        memory_kinds=dict(memory_kinds or {}),
        measured=tuple(measured_fixes(records).values()),
    )


def recorded_evidence(session: SessionData) -> Evidence:
    return evidence(session)


def live_evidence(session: Any, shell: Any) -> Evidence:
    """The evidence of the live session ``session``, with what only the kernel can say. That is each
    framework's allocator retries, the plug-ins' models in full precision in ``shell``, and each
    GPU's memory by kind (the holder scan, where a framework has the GPU up)."""
    retries = {
        name: {
            d.index: by_cuda[d.cuda_index].alloc_retries
            for d in session.device_source.devices
            if d.cuda_index in by_cuda
        }
        for name, by_cuda in session.ledger.read_allocators().items()
    }
    models = None
    kinds: dict[int, dict[str, int]] = {}
    if shell is not None and session.memory.gpu_framework_active():
        from ..._forensics import holder_scan

        scan = holder_scan.scan(shell, "cuda")
        for d in session.device_source.devices:
            if d.cuda_index is not None and f"cuda:{d.cuda_index}" in scan.categories:
                kinds[d.index] = scan.categories[f"cuda:{d.cuda_index}"]
    if shell is not None:
        models = [
            name
            for f in frameworks()
            if f.precision_advice is not None
            for name in f.precision_advice.full_precision_models(shell)
        ]
    return evidence(session.data, retries, models, kinds)


def _newest_kinds(ev: Evidence, index: int) -> dict[str, int]:
    """GPU ``index``'s memory by kind at the end of the newest cell that read it."""
    for r in reversed(ev.records):
        for d in r.devices:
            if d.index == index and d.kinds_after:
                return dict(d.kinds_after)
    return {}


def _kept(r: CellRecord) -> int | None:
    return r.retained if r.retained is not None else r.rss_delta


def _during(ev: Evidence, t: float) -> str:
    for r in ev.records:
        if r.kind == "cell" and r.start <= t <= r.start + r.duration:
            return r.name
    return ""
