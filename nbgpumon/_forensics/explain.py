"""This kernel's memory on one GPU by what it is, adding up to the driver's figure for this process.
It is what the holder scan found by kind (parameters, gradients, optimizer state, buffers, other
arrays, outputs and tracebacks), what each framework's allocator counts in use beyond that
(unexplained: nothing the scan reached holds it), each allocator's reserve it does not use, and the
rest of the driver's figure (the CUDA context, its libraries' workspaces).

Pure arithmetic over figures read by the caller, so that the categories add up by
construction and each one is what its definition says; where the readings disagree (taken
moments apart), a note says so rather than a category going negative. Notes and where the
total comes from are facts, worded by ``_views/memory/explain.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._ledger.kinds_notes import KindsNote, ScanCut, ScanFoundMore
from .._ledger.records import CellRecord
from .._ledger.traced import TracedItem
from .._sources.base import AllocatorStats
from .._sources.frameworks.holder_walk import in_category_order
from .._sources.frameworks.plugin import facts_of

UNEXPLAINED = "unexplained"
CONTEXT = "CUDA context and libraries"
# MemoryExplained.measured: where its total comes from
DRIVER = "driver"  # the driver's figure for this process
FRAMEWORKS = "frameworks"  # what the frameworks hold and reserve: the driver's figure is below
NO_FIGURE = "no figure"  # the same, the driver giving no figure for this process
# NoProcessFigure.why
NOT_ANSWERING = "not answering"  # the device source did not answer in time
NOT_LISTED = "not listed"  # its list has no process of this kernel's on the GPU
NO_PROCESS_LISTS = "no process lists"  # it lists no processes at all (no ProcessRole)
NO_AMOUNT = "no amount"  # it lists this process without saying how much it uses


@dataclass(frozen=True, slots=True)
class NoProcessFigure:
    """Why the device source gives no figure for this process on a GPU."""

    why: str  # NOT_ANSWERING, NOT_LISTED, NO_PROCESS_LISTS or NO_AMOUNT
    source: str  # the device source's label ("NVML")


@dataclass(frozen=True, slots=True)
class Fragmented:
    """Part of a framework's reserve is split blocks, too small for large requests."""

    framework: str  # its plug-in's label ("torch")
    bytes: int  # of split blocks


@dataclass(frozen=True, slots=True)
class DriverBelow:
    """The driver's figure for this process is below what the frameworks hold and reserve
    (their counters moved after its list was read)."""

    driver: int  # bytes
    frameworks: int  # bytes


ExplainNote = ScanFoundMore | Fragmented | DriverBelow | ScanCut


@dataclass(frozen=True, slots=True)
class MemoryExplained:
    """One GPU's share of this kernel, by category."""

    index: int  # the GPU, as the device source numbers it (gpu0)
    device: str  # "cuda:N" as CUDA numbers it in this process
    total: int  # bytes: the driver's figure for this process (``measured`` says otherwise)
    categories: dict[str, int]  # name -> bytes, in a stable order, adding up to ``total``
    measured: str  # where ``total`` comes from: DRIVER, FRAMEWORKS or NO_FIGURE
    notes: tuple[ExplainNote, ...] = ()  # readings that disagree, fragmentation, a scan cut
    no_figure: NoProcessFigure | None = None  # NO_FIGURE: why (None: not said)


def reserve_category(framework: str) -> str:
    """The category of what ``framework``'s allocator reserves and does not use."""
    facts = facts_of(framework)
    return f"{facts.label} {facts.reserve_name} (reserved, unused)"


def allocated_by_kind(
    found: Mapping[str, int],
    found_by_framework: Mapping[str, int],
    allocated: Mapping[str, int],
) -> tuple[dict[str, int], list[ScanFoundMore]]:
    """What the frameworks count in use on one device, by kind. First the scan's categories
    (``found``), then what each framework counts beyond what the scan found of its
    (``found_by_framework``, against ``allocated``: framework -> bytes) as unexplained; with the
    notes on readings that disagree."""
    categories = {name: found[name] for name in in_category_order(found) if found[name]}
    notes: list[ScanFoundMore] = []
    unexplained = 0
    for name, in_use in allocated.items():
        left = in_use - found_by_framework.get(name, 0)
        if left < 0:  # the scan and the counters were read moments apart
            notes.append(ScanFoundMore(facts_of(name).label, -left))
        unexplained += max(left, 0)
    if unexplained:
        categories[UNEXPLAINED] = unexplained
    return categories, notes


def explain_device(
    index: int,
    cuda_index: int,
    found: Mapping[str, int],
    found_by_framework: Mapping[str, int],
    allocators: Mapping[str, AllocatorStats],
    process_bytes: int | None,
    why_no_process_figure: NoProcessFigure | None = None,
    partial: ScanCut | None = None,
) -> MemoryExplained:
    """The breakdown of one GPU (``cuda_index`` in this process).

    ``found``: the holder scan's bytes by category on this device; ``found_by_framework``: the
    same by framework; ``allocators``: each active framework's counters on this device;
    ``process_bytes``: the driver's figure for this process (None where it gives none, said
    by ``why_no_process_figure``); ``partial``: where the scan stopped early, if it did.
    """
    allocated = {name: stats.allocated for name, stats in allocators.items()}
    categories, disagree = allocated_by_kind(found, found_by_framework, allocated)
    notes: list[ExplainNote] = list(disagree)
    for name, stats in allocators.items():
        unused = stats.reserved - stats.allocated
        if unused > 0:
            categories[reserve_category(name)] = unused
        if stats.inactive_split:
            notes.append(Fragmented(facts_of(name).label, stats.inactive_split))
    counted = sum(categories.values())
    if process_bytes is None:
        measured, total = NO_FIGURE, counted
    elif process_bytes >= counted:
        measured = DRIVER
        if process_bytes > counted:
            categories[CONTEXT] = process_bytes - counted
        total = process_bytes
    else:  # the frameworks' counters moved after the driver's list was read
        measured, total = FRAMEWORKS, counted
        notes.append(DriverBelow(process_bytes, counted))
    if partial is not None:
        notes.append(partial)
    why = why_no_process_figure if measured == NO_FIGURE else None
    return MemoryExplained(
        index, f"cuda:{cuda_index}", total, categories, measured, tuple(notes), why
    )


@dataclass(frozen=True, slots=True)
class CellExplained:
    """One GPU's memory in one cell, by kind: at the cell's end and at its peak."""

    index: int  # the GPU, as the device source numbers it (gpu0)
    device: str  # "cuda:N"
    cell: str  # the record's name: "[12]"
    total: int  # bytes the frameworks held from the driver at the cell's end (reserved)
    categories: dict[str, int]  # at its end: by kind, then each allocator's unused reserve
    kept: dict[str, int]  # by kind, its end less its start (negative: freed); {} unknown
    peak: int  # the highest allocated while it ran
    peak_exact: bool  # False: a sampled lower bound
    peak_categories: dict[str, int]  # what was there at its end, then the transient rest
    notes: tuple[KindsNote, ...] = ()  # how its kinds were read (the record's ``kinds_note``)
    # with tracing on: what the peak held and the cell freed, by cell line (the record's)
    peak_traced: tuple[TracedItem, ...] = ()
    start_read: bool = True  # False: its start was not read by kind, so ``kept`` is unknown


def explain_cell(record: CellRecord) -> list[CellExplained]:
    """Each GPU of ``record`` whose memory by kind was read at its end (none: [])."""
    found = []
    for d in record.devices:
        if not d.kinds_after:
            continue
        categories = dict(d.kinds_after)
        for f in d.frameworks:
            if f.reserved_after is not None and f.allocated_after is not None:
                unused = f.reserved_after - f.allocated_after
                if unused > 0:
                    categories[reserve_category(f.framework)] = unused
        split = d.peak_by_kind
        found.append(
            CellExplained(
                index=d.index,
                device=f"cuda:{d.cuda_index}",
                cell=record.name,
                total=sum(categories.values()),
                categories=categories,
                kept=d.kept_by_kind if d.kinds_before else {},
                peak=sum(split.values()),
                peak_exact=d.peak_exact,
                peak_categories=split,
                notes=d.kinds_note,
                peak_traced=record.traced_peak,
                start_read=bool(d.kinds_before),
            )
        )
    return found
