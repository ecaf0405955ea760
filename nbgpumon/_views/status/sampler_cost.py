"""What the sampler costs, in words (``%gpumon status``, the benchmarks' logs), from its
``CostReport``: a share of a core, each tick class's CPU per tick, the device source's calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.wording import counted

if TYPE_CHECKING:
    from ..._session.facts.status import CostReport

SHARE_AFTER = 1.0  # seconds of ticking before the share of a core is worth saying


def cost_line(report: CostReport) -> str:
    """What the sampler costs, as one line: ``sampler cost: 0.03% of a core over 60 s (fast
    14 µs CPU/tick ×600; …), 41 NVML calls/s (20 keeping the GIL)``."""
    if not report.ticks:
        return "sampler cost: no tick yet"
    parts = [
        f"{name} {_us(g.cpu_per_tick)} CPU/tick ×{g.ticks}"
        for name, g in report.tick_groups.items()
    ]
    subs = report.subscribers
    if subs is not None and subs.cpu_seconds:
        parts.append(f"subscribers {_us(subs.cpu_seconds / report.ticks)}/tick")
    calls = ""
    n, label, kept = report.device_calls, report.device_label, report.device_gil_kept_calls
    if n and report.seconds < SHARE_AFTER:  # (a rate over a tick says nothing)
        calls = f", {counted(n, label + ' call')} ({kept} keeping the GIL)"
    elif n:
        rate, kept_rate = report.device_calls_per_second, kept / report.seconds
        calls = f", {rate:.0f} {label} calls/s ({kept_rate:.0f} keeping the GIL)"
    if report.seconds < SHARE_AFTER:  # (one tick: its own length, a share near 100%)
        ticks = f"{report.ticks} tick{'s' if report.ticks != 1 else ''}"
        head = f"sampler cost: {ticks} in {report.seconds:.1f} s, too soon for a share of a core"
    else:
        head = f"sampler cost: {report.core_share * 100:.3g}% of a core over {report.seconds:.0f} s"
    return f"{head} ({'; '.join(parts)}){calls}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds >= 1e-5 else f"{seconds * 1e6:.1f} µs"
