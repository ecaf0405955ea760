"""The out-of-memory post-mortem's sentences, from its facts (``_forensics/postmortem.py``):
where it ran out, who holds what, and what to try, most memory back first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._forensics.holder_scan import root_of
from ..._forensics.oom_snapshot import NOT_TRACING, SAVED, TRACING_NOT_YET, FlightRecord
from ..._forensics.postmortem import FRAGMENTED, OomFacts, PluginWords
from ..._foundation.wording import format_bytes
from ..._ledger.measured_fixes import MeasuredFix
from ..words.measured_fixes import UNMEASURED, measured_line
from ..words.processes import process_who
from ..words.traced import format_live
from .holders import scan_cut_words


def report(facts: OomFacts, measured: Sequence[MeasuredFix] = ()) -> str:
    """The post-mortem, as lines of plain text; ``measured``: what ``whatif`` measured of the
    fixes on the user's step, quoted after what to try (else how to measure it)."""
    words = _words(facts)
    where = "" if facts.cuda_index is None else f" on cuda:{facts.cuda_index}"
    if facts.device_name:
        where += f" ({facts.device_name})"
    asked = "" if facts.requested is None else f": asked for {format_bytes(facts.requested)}"
    lines = [f"nbgpumon: out of GPU memory ({words.who}) in {facts.cell}{asked}{where}"]
    if facts.device_total:
        lines.append(
            f"  device: {format_bytes(facts.device_free)} free of "
            f"{format_bytes(facts.device_total)} ({facts.device_label})"
        )
    for name, stats in facts.allocators.items():
        lines.append(
            f"  this kernel, {words.labels.get(name, name)}: {format_bytes(stats.allocated)} in "
            f"use, {format_bytes(stats.reserved)} reserved "
            f"({format_bytes(stats.reserved - stats.allocated)} reserved but unused)"
        )
    scan = facts.holders
    if scan is not None and scan.holders:
        top = " · ".join(f"{h.name} {format_bytes(h.bytes)}" for h in scan.holders[:5])
        lines.append(f"  held by: {top}")
        kinds = _by_kind(facts)
        if kinds:
            lines.append(f"  by kind: {kinds}")
        if scan.partial is not None:
            lines.append(f"  ({scan_cut_words(scan.partial)})")
    elif scan is not None:
        lines.append("  held by: no tensor found in variables, outputs or tracebacks")
    for p in facts.processes:
        lines.append(f"  process: {_process_name(p)}")
    if facts.largest:
        lines.append("  largest live blocks by the cell and line that allocated them:")
        lines += [f"    {format_live(a)}" for a in facts.largest]
    if facts.snapshot is not None:
        lines.append(f"  {snapshot_line(facts.snapshot)}")
    lines.append("  what to try, most memory back first:")
    lines += [f"    {n}. {text}" for n, text in enumerate(fixes(facts), 1)]
    lines.append(f"  {measured_line(measured) or UNMEASURED}")
    return "\n".join(lines)


def snapshot_line(snapshot: FlightRecord) -> str:
    """Where the memory snapshot was saved (and where to open it), or why there is none."""
    if snapshot.state == SAVED:
        open_at = f"; open it at {snapshot.viewer}" if snapshot.viewer else ""
        return f"memory snapshot: {snapshot.path} ({format_bytes(snapshot.size)}{open_at})"
    if snapshot.state == NOT_TRACING:
        return (
            "memory snapshot: none; %gpumon trace on saves one at the next out-of-memory error "
            "and names the lines that allocated the live blocks"
        )
    if snapshot.state == TRACING_NOT_YET:
        return (
            "memory snapshot: none; allocation tracing was not recording yet during this cell "
            "(it starts after the cell that initialises CUDA)"
        )
    return snapshot.problem


def _by_kind(facts: OomFacts) -> str:
    """What the scan found on the failing device by kind, then what the frameworks count in
    use beyond it (the failing step's activations that no frame still names, mostly)."""
    scan = facts.holders
    if scan is None or facts.cuda_index is None:
        return ""
    place = f"cuda:{facts.cuda_index}"
    found = scan.categories.get(place, {})
    parts = [f"{kind} {format_bytes(size)}" for kind, size in found.items()]
    owners = scan.frameworks.get(place, {})
    beyond = sum(
        max(stats.allocated - owners.get(name, 0), 0) for name, stats in facts.allocators.items()
    )
    if parts and beyond:
        parts.append(f"unexplained {format_bytes(beyond)}")
    return " · ".join(parts)


def fixes(facts: OomFacts) -> list[str]:
    """What to try, most bytes back first; the generic advice last."""
    words = _words(facts)
    ranked: list[tuple[int, str]] = []
    holders = facts.holders.holders if facts.holders else ()
    variables = [h for h in holders if not h.hidden]
    hidden = [h for h in holders if h.hidden]
    if variables:
        names = sorted({root_of(h.name) for h in variables[:3]})
        size = sum(h.bytes for h in variables[:3])
        them = "them" if len(names) > 1 else "it"
        ranked.append(
            (size, f"del {', '.join(names)} ({format_bytes(size)}) if you no longer need {them}")
        )
    if hidden:
        size = sum(h.bytes for h in hidden)
        what = ", ".join(dict.fromkeys(_hidden_kind(h.name) for h in hidden))
        ranked.append((size, f"%gpumon free: drops {what} ({format_bytes(size)})"))
    for name, stats in facts.allocators.items():
        idle = stats.reserved - stats.allocated
        if idle >= FRAGMENTED:
            other = " (another framework's cache)" if name != facts.framework else ""
            fix = words.idle_fixes.get(name, "")
            ranked.append((idle, fix.format(size=format_bytes(idle), other=other)))
    others = [p for p in facts.processes if not p.is_this_kernel and p.used_memory]
    if others:
        size = sum(p.used_memory or 0 for p in others)
        who = ", ".join(_process_name(p) for p in others[:3])
        ranked.append((size, f"other processes hold {format_bytes(size)} on this GPU: {who}"))
    ranked.sort(key=lambda r: -r[0])
    return [text for _, text in ranked] + [words.general_fix]


def _words(facts: OomFacts) -> PluginWords:
    assert facts.words is not None  # (OomFacts fills them in)
    return facts.words


def _hidden_kind(name: str) -> str:
    if name.startswith("Out["):
        return "outputs (Out, _N)"
    if name.startswith("traceback"):
        return "the stored traceback"
    if name.startswith("_"):
        return "_, __, ___"
    return "the last result"


def _process_name(p: Any) -> str:
    pid = getattr(p, "pid", None)
    used = getattr(p, "used_memory", None)
    return f"{'PID ?' if pid is None else f'PID {pid}'} {process_who(p)} {format_bytes(used)}"
