"""This kernel's GPU memory by what it is, in words and as a stacked bar (``%gpumon
explain``, ``print(nbgpumon.explain())``)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._foundation.units import format_bytes

if TYPE_CHECKING:
    from .._forensics.explain import MemoryExplained

BAR_WIDTH = 30  # characters for the whole of a GPU's figure
# one colour per category, the same on every GPU; a framework's reserve in greys (others cycle)
COLOURS = {
    "parameters": "#2563eb",
    "gradients": "#60a5fa",
    "optimizer state": "#f59e0b",
    "buffers": "#a855f7",
    "arrays held by variables": "#10b981",
    "outputs and tracebacks": "#ec4899",
    "unexplained": "#ef4444",
    "CUDA context and libraries": "#334155",
}
RESERVE_COLOURS = ("#94a3b8", "#cbd5e1", "#64748b")


def explain_lines(entries: Sequence[MemoryExplained]) -> list[str]:
    """Each GPU's figure, then its categories (bytes, share, a bar), then its notes."""
    lines = ["nbgpumon explain: this kernel's GPU memory by what it is"]
    for e in entries:
        head = f"gpu{e.index} ({e.device})"
        if not e.categories:
            lines.append(f"{head}: nothing of this kernel's")
            continue
        lines.append(f"{head}: {format_bytes(e.total)}, {e.measured}")
        width = max(len(name) for name in e.categories)
        for name, size in e.categories.items():
            share = size / e.total if e.total else 0.0
            bar = "█" * round(share * BAR_WIDTH)
            lines.append(
                f"  {name.ljust(width)}  {format_bytes(size):>10}  {share * 100:3.0f}%  {bar}"
            )
        lines += [f"  ({note})" for note in e.notes]
    if not entries:
        lines.append("no GPU this kernel can use")
    return lines


def explain_text(entries: Sequence[MemoryExplained]) -> str:
    """:func:`explain_lines` as one text."""
    return "\n".join(explain_lines(entries))


def explain_html(entries: Sequence[MemoryExplained]) -> str:
    """Each GPU's categories as one stacked bar (a tip per part), above the words."""
    bars = []
    for e in entries:
        if not e.total:
            continue
        colours = _colours(list(e.categories))
        parts = "".join(
            f'<span title="{html.escape(f"{name}: {format_bytes(size)}")}" '
            f'style="flex:{size / e.total * 1000:.3f} 0 0;background:{colours[name]}"></span>'
            for name, size in e.categories.items()
        )
        legend = " · ".join(
            f'<span style="color:{colours[name]}">■</span> {html.escape(name)}'
            for name in e.categories
        )
        head = html.escape(f"gpu{e.index} ({e.device}): {format_bytes(e.total)}")
        bars.append(
            f'<div class="nbgpumon-explain">{head}'
            f'<div style="display:flex;height:12px;width:100%;max-width:640px;margin:2px 0">'
            f'{parts}</div><div style="font-size:11px">{legend}</div></div>'
        )
    return "".join(bars) + f"<pre>{html.escape(explain_text(entries))}</pre>"


def _colours(names: list[str]) -> dict[str, str]:
    """Each category's colour: its own, else a reserve's grey in turn."""
    others = iter(RESERVE_COLOURS * (len(names) // len(RESERVE_COLOURS) + 1))
    return {name: COLOURS.get(name) or next(others) for name in names}
