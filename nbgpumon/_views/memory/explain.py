"""This kernel's GPU memory by what it is, in words and as a stacked bar (``%gpumon
explain``, ``print(nbgpumon.explain())``)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..._forensics.explain import (
    DRIVER,
    FRAMEWORKS,
    NO_AMOUNT,
    NO_PROCESS_LISTS,
    NOT_ANSWERING,
    NOT_LISTED,
    DriverBelow,
    ExplainNote,
    Fragmented,
    NoProcessFigure,
)
from ..._forensics.holder_scan import arrays_rank
from ..._foundation.wording import format_bytes
from ..._ledger.kinds_notes import CarriedOver, KindsNote, KindsReadFailed, ScanCut, ScanFoundMore
from ..._ledger.records import TRANSIENT
from ..palette import ARRAYS_GREENS, CATEGORY_COLORS, RESERVE_GREYS
from ..words.text_view import pre_html
from ..words.traced import traced_line
from .holders import scan_cut_words

if TYPE_CHECKING:
    from ..._forensics.explain import CellExplained, MemoryExplained
    from ..._ledger.records import CellRecord

BAR_WIDTH = 30  # characters for the whole of a GPU's figure


def explain_lines(entries: Sequence[MemoryExplained]) -> list[str]:
    """Each GPU's figure, then its categories (bytes, share, a bar), then its notes."""
    lines = ["nbgpumon explain: this kernel's GPU memory by what it is"]
    for e in entries:
        head = f"gpu{e.index} ({e.device})"
        if not e.categories:
            lines.append(f"{head}: nothing of this kernel's")
            continue
        lines.append(f"{head}: {format_bytes(e.total)}, {measured_words(e)}")
        lines += _category_lines(e.categories, e.total)
        lines += [f"  ({note_words(note)})" for note in e.notes]
    if not entries:
        lines.append("no GPU this kernel can use")
    return lines


def explain_text(entries: Sequence[MemoryExplained]) -> str:
    """:func:`explain_lines` as one text."""
    return "\n".join(explain_lines(entries))


def explain_html(entries: Sequence[MemoryExplained]) -> str:
    """Each GPU's categories as one stacked bar (a tip per part), above the words."""
    bars = [
        _bar(f"gpu{e.index} ({e.device}): {format_bytes(e.total)}", e.categories, e.total)
        for e in entries
        if e.total
    ]
    return "".join(bars) + pre_html(explain_text(entries))


def cell_explain_lines(entries: Sequence[CellExplained]) -> list[str]:
    """Each GPU of one cell: its memory by kind at the end (and what it kept, by kind), then
    its peak split into what stayed and what it freed before its end."""
    if not entries:
        return ["nbgpumon explain: no breakdown"]
    lines = [f"nbgpumon explain {entries[0].cell}: the cell's GPU memory by what it is"]
    for e in entries:
        lines.append(
            f"gpu{e.index} ({e.device}) at its end: {format_bytes(e.total)}, what the "
            "frameworks held and reserved"
        )
        lines += _category_lines(e.categories, e.total)
        if e.kept:
            kept = ", ".join(
                f"{format_bytes(size, signed=True)} {name}" for name, size in e.kept.items()
            )
            lines.append(f"  kept since its start: {kept}")
        elif e.start_read:
            lines.append("  kept since its start: nothing")
        exact = "exact" if e.peak_exact else "sampled: at least"
        lines.append(f"gpu{e.index} ({e.device}) at its peak: {format_bytes(e.peak)} ({exact})")
        lines += _category_lines(e.peak_categories, e.peak)
        if e.peak_traced:
            lines.append("  what the peak held and the cell freed, by the line that allocated it:")
            lines += [f"    {traced_line(item)}" for item in e.peak_traced]
        elif e.peak_categories.get(TRANSIENT):
            lines.append(
                "  (%gpumon trace on names the lines of the activations and temporaries, "
                "from the next cell on)"
            )
        if e.notes:
            lines.append(f"  ({kinds_note_words(e.notes)})")
        if not e.start_read:
            lines.append("  (what it kept by kind is unknown: its start was not read by kind)")
    return lines


def measured_words(e: MemoryExplained) -> str:
    """Where a GPU's total comes from: the driver's figure for this process, or what the
    frameworks hold and reserve (and why the driver gave no figure, where it gave none)."""
    if e.measured == DRIVER:
        return "the driver's figure for this process"
    if e.measured == FRAMEWORKS:
        return "what the frameworks hold and reserve"
    why = "no figure of the driver's for this process"
    return f"what the frameworks hold and reserve: {no_figure_words(e.no_figure) or why}"


def no_figure_words(no_figure: NoProcessFigure | None) -> str:
    """Why the device source gives no figure for this process ("" where not said)."""
    if no_figure is None:
        return ""
    return {
        NOT_ANSWERING: f"{no_figure.source} not answering",
        NOT_LISTED: "the driver does not list this process on it",
        NO_PROCESS_LISTS: f"{no_figure.source} lists no processes",
        NO_AMOUNT: "the driver does not say how much this process uses",
    }.get(no_figure.why, "")


def note_words(note: ExplainNote | KindsNote) -> str:
    """One note of a breakdown: how its figures were read, or where they disagree; a note of a
    recording older than schema 7 (text) as it is."""
    if isinstance(note, ScanCut):
        return f"the scan {scan_cut_words(note)}"
    if isinstance(note, ScanFoundMore):
        return (
            f"the scan found {format_bytes(note.bytes)} more of {note.framework}'s than it "
            "counts in use: read moments apart"
        )
    if isinstance(note, Fragmented):
        return (
            f"{note.framework}: {format_bytes(note.bytes)} of its reserve is split blocks, too "
            "small for large requests (fragmentation)"
        )
    if isinstance(note, DriverBelow):
        return (
            f"the driver's figure for this process ({format_bytes(note.driver)}) is below what "
            f"the frameworks hold and reserve ({format_bytes(note.frameworks)}): read moments "
            "apart"
        )
    if isinstance(note, CarriedOver):
        if note.bound_names:
            return "carried over: the cell allocated nothing and bound no GPU memory"
        return "carried over: the cell moved no allocator and bound no name"
    if isinstance(note, KindsReadFailed):
        return f"reading the cell's memory by kind failed: {note.error}"
    return note


def kinds_note_words(notes: Sequence[KindsNote]) -> str:
    """How a cell's memory by kind was read (its record's ``kinds_note``), in one line."""
    return "; ".join(note_words(note) for note in notes)


def cell_explain_text(entries: Sequence[CellExplained]) -> str:
    """:func:`cell_explain_lines` as one text."""
    return "\n".join(cell_explain_lines(entries))


def cell_explain_html(entries: Sequence[CellExplained]) -> str:
    """Two stacked bars per GPU (at the cell's end, at its peak) on one scale, above the
    words."""
    bars = []
    for e in entries:
        scale = max(e.total, e.peak)
        if not scale:
            continue
        bars.append(_bar(f"gpu{e.index} at its end: {format_bytes(e.total)}", e.categories, scale))
        bars.append(
            _bar(f"gpu{e.index} at its peak: {format_bytes(e.peak)}", e.peak_categories, scale)
        )
    return "".join(bars) + pre_html(cell_explain_text(entries))


def _category_lines(categories: dict[str, int], total: int) -> list[str]:
    """One line per category: its bytes, its share of ``total``, a bar."""
    if not categories:
        return []
    width = max(len(name) for name in categories)
    lines = []
    for name, size in categories.items():
        share = size / total if total else 0.0
        bar = "█" * round(share * BAR_WIDTH)
        lines.append(f"  {name.ljust(width)}  {format_bytes(size):>10}  {share * 100:3.0f}%  {bar}")
    return lines


def _bar(head: str, categories: dict[str, int], scale: int) -> str:
    """``categories`` as one stacked bar whose full width is ``scale`` bytes (a tip per
    part, a legend below); every name escaped."""
    colours = _colours(list(categories))
    parts = "".join(
        f'<span title="{html.escape(f"{name}: {format_bytes(size)}")}" '
        f'style="flex:0 0 {size / scale * 100:.3f}%;background:{colours[name]}"></span>'
        for name, size in categories.items()
    )
    legend = " · ".join(
        f'<span style="color:{colours[name]}">■</span> {html.escape(name)}' for name in categories
    )
    return (
        f'<div class="nbgpumon-explain">{html.escape(head)}'
        f'<div style="display:flex;height:12px;width:100%;max-width:640px;margin:2px 0">'
        f'{parts}</div><div style="font-size:11px">{legend}</div></div>'
    )


def _colours(names: list[str]) -> dict[str, str]:
    """Each category's colour: its own, a framework's arrays' green, else a reserve's grey in
    turn."""
    others = iter(RESERVE_GREYS * (len(names) // len(RESERVE_GREYS) + 1))
    return {
        name: CATEGORY_COLORS.get(name) or _arrays_green(name) or next(others) for name in names
    }


def _arrays_green(name: str) -> str | None:
    """The green of one framework's arrays held by variables: by the plug-ins' order, numpy's
    after them; None for another category."""
    at = arrays_rank(name)
    return None if at is None else ARRAYS_GREENS[at % len(ARRAYS_GREENS)]


def kinds_words(record: CellRecord) -> str:
    """A cell's peak split on each GPU, in one line ("" where none was read): ``gpu0:
    parameters 475 MiB · gradients 475 MiB · activations and temporaries 1.2 GiB``."""
    parts = []
    for d in record.devices:
        split = d.peak_by_kind
        if split:
            words = " · ".join(f"{name} {format_bytes(size)}" for name, size in split.items())
            parts.append(f"gpu{d.index}: {words}")
    return "; ".join(parts)
