"""The words of ``%gpumon advise``: each finding of ``_session/analysis/advice.py`` as a hint that
cites the numbers behind it. The findings of a framework plug-in carry its own words (templates);
the generic rules' words are here."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..._foundation.metrics import device_label
from ..._foundation.wording import format_bytes, format_percent, format_seconds
from ..._ledger.measured_fixes import ACTIVATIONS, CACHE, MeasuredFix
from ..._session.analysis.advice import (
    ActivationsFinding,
    Evidence,
    Finding,
    IdleGpuFinding,
    MemoryLimitFinding,
    OptimizerStateFinding,
    PoolFinding,
    RerunFinding,
    evidence,
    findings,
    looked_for,
    recorded_evidence,
)
from .measured_fixes import UNMEASURED, measured_line

__all__ = ["Evidence", "Hint", "advise", "evidence", "hints_text", "recorded_evidence"]


@dataclass(frozen=True)
class Hint:
    topic: str  # "fragmentation", "input pipeline", "memory limit", "JAX preallocation", ...
    evidence: str  # the numbers that triggered it
    advice: str  # what to do
    measured: str = ""  # what whatif measured of the fixes it names, or how to measure it

    def __str__(self) -> str:
        measured = f"\n  measured: {self.measured}" if self.measured else ""
        return f"{self.topic}: {self.evidence}\n  → {self.advice}{measured}"


def advise(ev: Evidence) -> list[Hint]:
    """Every hint the evidence supports, in rule order, each quoting what ``whatif`` measured
    of the fixes it names."""
    return [_cited(hint(found), found, ev.measured) for found in findings(ev)]


def _cited(said: Hint, found: Finding, measured: tuple[MeasuredFix, ...]) -> Hint:
    """``said`` with the measured savings of its fixes: those that lower activations for the
    activations and memory-limit hints (or how to measure them), the cache's for a pool's."""
    if isinstance(found, (ActivationsFinding, MemoryLimitFinding)):
        line = measured_line(measured, ACTIVATIONS) or UNMEASURED
    elif isinstance(found, PoolFinding):  # (the fixes of the framework whose pool it is)
        line = measured_line((m for m in measured if m.framework == found.framework), CACHE)
    else:
        return said
    return dataclasses.replace(said, measured=line)


def hint(found: Finding) -> Hint:
    """One finding in words."""
    if isinstance(found, PoolFinding):
        return _pool(found)
    if isinstance(found, IdleGpuFinding):
        return _idle_gpu(found)
    if isinstance(found, MemoryLimitFinding):
        return _memory_limit(found)
    if isinstance(found, ActivationsFinding):
        return _activations(found)
    if isinstance(found, OptimizerStateFinding):
        return _optimizer_state(found)
    return _rerun(found)


def _during(cell: str) -> str:
    return f" during {cell}" if cell else ""


def _pool(f: PoolFinding) -> Hint:
    words = f.words
    facts = []
    if f.pool is not None and f.used is not None:
        idle = f.pool - f.used
        facts.append(
            words.evidence.format(
                pool=format_bytes(f.pool),
                used=format_bytes(f.used),
                idle=format_bytes(idle),
                share=idle / f.pool if f.pool else 0.0,
                during=_during(f.during),
                device=device_label(),  # the device source whose figure counts it: "NVML"
            )
        )
    if f.split is not None and words.split_evidence:
        facts.append(words.split_evidence.format(split=format_bytes(f.split)))
    if f.retries and words.retries_evidence:
        plural = "y" if f.retries == 1 else "ies"
        facts.append(words.retries_evidence.format(retries=f.retries, plural=plural))
    return Hint(words.topic, f"gpu{f.gpu} {f.gpu_name}: " + "; ".join(facts), words.advice)


def _idle_gpu(f: IdleGpuFinding) -> Hint:
    shown = ", ".join(
        f"{name} ran {format_seconds(seconds)} at {format_percent(util)} GPU"
        for name, seconds, util in f.cells
    )
    more = f" (and {f.more} more)" if f.more else ""
    return Hint(
        f.topic,
        f"the GPU was idle much of the time while cells worked: {shown}{more}",
        "feed it faster: DataLoader(num_workers=4 or more, pin_memory=True, "
        "persistent_workers=True), move preprocessing to the GPU, or a larger batch",
    )


def _memory_limit(f: MemoryLimitFinding) -> Hint:
    evidence = (
        f"gpu{f.gpu} {f.gpu_name}: {format_bytes(f.used)} of {format_bytes(f.total)} "
        f"in use ({f.used / f.total:.0%}){_during(f.during)}"
    )
    if f.precision_evidence:
        evidence += f.precision_evidence.format(names=", ".join(f.full_precision[:3]))
    advice = (
        f.advice
        or "gradient accumulation over smaller batches; %gpumon holders shows what holds it"
    )
    return Hint(f.topic, evidence, advice)


def _activations(f: ActivationsFinding) -> Hint:
    more = f" (and {f.more} more cell{'s' if f.more > 1 else ''} like it)" if f.more else ""
    return Hint(
        f.topic,
        f"gpu{f.gpu} {f.gpu_name}: {f.cell}'s peak of {format_bytes(f.peak)} was "
        f"{f.transient / f.peak:.0%} activations and temporaries ({format_bytes(f.transient)}, "
        f"freed before its end){more}",
        "activation (gradient) checkpointing recomputes them in the backward pass instead of "
        "keeping them; mixed precision (bfloat16 autocast) halves them; so does half the "
        "batch, with gradient accumulation to keep its size; %gpumon explain N shows the "
        "cell's split",
    )


def _optimizer_state(f: OptimizerStateFinding) -> Hint:
    return Hint(
        f.topic,
        f"gpu{f.gpu} {f.gpu_name}: the optimizer state holds {format_bytes(f.state)}, "
        f"{f.state / f.parameters:.1f}× the parameters ({format_bytes(f.parameters)})",
        "8-bit optimizer states (bitsandbytes' AdamW8bit) keep about a quarter of that; a "
        "lighter optimizer keeps less (SGD with momentum: 1× the parameters; Adafactor: "
        "factored moments); %gpumon explain shows the rest of the memory",
    )


def _rerun(f: RerunFinding) -> Hint:
    held = (
        "; held by " + ", ".join(f"{n} {format_bytes(b)}" for n, b in f.holders)
        if f.holders
        else ""
    )
    return Hint(
        f.topic,
        f"{f.label!r} ran {len(f.runs)} times ({', '.join(f.runs)}) "
        f"and each run kept more {f.where} memory: "
        f"{', '.join(format_bytes(k) for k in f.kept)} ({format_bytes(sum(f.kept))} in all)"
        f"{held}",
        "something outlives each run (a list appended to, Out[N], a global cache): "
        "%gpumon holders names it; %gpumon free drops outputs and tracebacks",
    )


def hints_text(hints: Sequence[Hint]) -> str:
    if not hints:
        names = looked_for()
        listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)
        return f"nbgpumon advise: nothing to suggest: no {listed} in what was measured"
    return "\n".join(f"{n}. {hint}" for n, hint in enumerate(hints, 1))
