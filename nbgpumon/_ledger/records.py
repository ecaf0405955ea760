"""The ledger's immutable records: one per executed cell or tracked region."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._foundation.clipping import clipped
from .._sources.frameworks import frameworks
from .._sources.processes.children import ChildUsage, child_from_dict
from .kinds_notes import KindsNote, ScanCut, kinds_notes_from_json, scan_cut_from_json
from .traced import TracedItem, traced_from_json

# the part of a cell's peak that it freed before its end (DeviceUsage.peak_by_kind)
TRANSIENT = "activations and temporaries"


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


@dataclass(frozen=True, slots=True)
class AllocatorUsage:
    """What one cell did in one framework's allocator on one GPU (bytes; None: not measured)."""

    framework: str  # "torch", "jax", "cupy"
    allocated_before: int | None  # live tensors / arrays
    allocated_after: int | None
    reserved_before: int | None  # held from the driver by its cache or pool
    reserved_after: int | None
    peak_allocated: int | None
    peak_exact: bool  # False: a lower bound (sampled, or a counter that can't be reset)
    allocated_total: int | None = None  # torch only: bytes handed out during the cell

    @property
    def allocated_delta(self) -> int | None:
        return _delta(self.allocated_before, self.allocated_after)

    @property
    def retained(self) -> int | None:
        delta = self.allocated_delta
        return None if delta is None else max(0, delta)


@dataclass(frozen=True, slots=True)
class DeviceUsage:
    """What one cell did on one GPU. Bytes unless named otherwise; None = not measured."""

    index: int
    cuda_index: int | None
    name: str
    # The allocator figures are over every framework active on the device (``frameworks``
    # has each one's). With one framework they are its own; with several, the peak is the sum
    # of their peaks (which need not coincide) and is marked inexact.
    allocated_before: int | None  # live tensors / arrays
    allocated_after: int | None
    reserved_before: int | None  # held from the driver by the allocators
    reserved_after: int | None
    device_used_before: int | None  # the driver's view: every process on the device
    device_used_after: int | None
    peak_allocated: int | None  # highest allocated while the cell ran
    peak_exact: bool  # True: from a peak counter; False: a lower bound from samples
    allocated_total: int | None  # bytes handed out during the cell, freed or not (torch)
    util_mean: float | None  # percent, from the timeline
    util_max: float | None
    frameworks: tuple[AllocatorUsage, ...] = ()  # one per framework active on the device
    # The allocated bytes by kind (holder_walk.CATEGORIES, then "unexplained": in use, reached
    # by nothing), at the cell's start and its end, each adding up to that moment's allocated
    # figure; () where not read (no framework had the GPU up). ``kinds_note``: how, as facts
    # (kinds_notes.py: a carried figure, a scan cut short; a recording's text before schema 7).
    kinds_before: tuple[tuple[str, int], ...] = ()
    kinds_after: tuple[tuple[str, int], ...] = ()
    kinds_note: tuple[KindsNote, ...] = ()

    @property
    def allocated_delta(self) -> int | None:
        return _delta(self.allocated_before, self.allocated_after)

    @property
    def kept_by_kind(self) -> dict[str, int]:
        """What the cell kept (or freed: negative), by kind: its end's kinds less its start's."""
        before, after = dict(self.kinds_before), dict(self.kinds_after)
        change = {name: after.get(name, 0) - before.get(name, 0) for name in {**before, **after}}
        order = [name for name, _ in self.kinds_after] + [n for n, _ in self.kinds_before]
        return {name: change[name] for name in dict.fromkeys(order) if change[name]}

    @property
    def peak_by_kind(self) -> dict[str, int]:
        """The cell's peak split: what it held at its end (by kind), and the rest of the peak,
        freed before the end (activations and temporaries); adds up to ``peak_allocated``."""
        if not self.kinds_after or self.peak_allocated is None or self.allocated_after is None:
            return {}
        split = dict(self.kinds_after)
        transient = self.peak_allocated - self.allocated_after
        if transient > 0:
            split[TRANSIENT] = transient
        return split

    @property
    def reserved_delta(self) -> int | None:
        return _delta(self.reserved_before, self.reserved_after)

    @property
    def device_used_delta(self) -> int | None:
        return _delta(self.device_used_before, self.device_used_after)

    @property
    def retained(self) -> int | None:
        """Allocator bytes this cell left behind (never negative)."""
        delta = self.allocated_delta
        return None if delta is None else max(0, delta)

    # The names of nbgpumon 0.1 (docs/python-api.md), read-only: NVML was the only device source.
    @property
    def nvml_index(self) -> int:
        return self.index

    @property
    def nvml_used_before(self) -> int | None:
        return self.device_used_before

    @property
    def nvml_used_after(self) -> int | None:
        return self.device_used_after

    @property
    def nvml_used_delta(self) -> int | None:
        return self.device_used_delta


@dataclass(frozen=True, slots=True)
class Retention:
    """Who holds what a cell newly retained (set when it kept more than the threshold)."""

    device: str  # "cuda" (the allocator's retained bytes) or "host" (resident memory)
    holders: tuple[tuple[str, int], ...]  # (holder name, bytes), biggest first
    # the holder scan stopped early (None: it did not; a recording's words before schema 7)
    note: ScanCut | str | None = None


@dataclass(frozen=True, slots=True)
class CellRecord:
    """One execution: a notebook cell (``kind="cell"``) or a ``track()`` region."""

    index: int  # position in this kernel's ledger, from 0
    kind: str  # "cell" or "region"
    execution_count: int | None  # the N of In[N]; a region carries its cell's
    cell_id: str | None  # the front end's cell id, when it sends one
    label: str  # first non-blank source line, or the region's label
    start: float  # unix time, seconds
    duration: float  # seconds
    status: str  # "ok", "error", "interrupted" or "oom"
    error: str  # "ValueError: bad shape" for failed cells, else ""
    devices: tuple[DeviceUsage, ...]
    rss_before: int | None  # host resident set, bytes
    rss_after: int | None
    rss_peak: int | None
    rss_peak_exact: bool
    retention: Retention | None = None  # who holds what it kept, when it kept a lot
    # with tracing on: what it left behind, by cell line (TracedAllocation; in a recording
    # older than schema 7, its lines as text)
    traced: tuple[TracedItem, ...] = ()
    # The cell's source, at most 64 KiB of UTF-8 (cell_source.py); a region has none of its
    # own: "" and no hash. ``source_cut``: ``source`` is not the whole of it, either the first
    # 64 KiB of a longer cell or, in a ledger past its memory budget, "" for an old record.
    source: str = ""
    source_hash: str | None = None  # of the whole source: 16 hex digits of its SHA-256
    source_cut: bool = False
    # Why the device source's figures at its start or end are missing ("NVML not answering":
    # a driver that kept the reading past its deadline); "" when both were read. Never stale.
    device_unavailable: str = ""
    # the processes it started (children, their children) that used a GPU, as last seen: a
    # child that outlives its cell is brought up to date in the ledger while it runs
    children: tuple[ChildUsage, ...] = ()
    # with tracing on: what its peak held and it freed before its end (activations and
    # temporaries), by cell line, each device's then its ReplayCut if the replay stopped short
    traced_peak: tuple[TracedItem, ...] = ()

    def __repr__(self) -> str:
        # short, whatever the cell: its source (up to 64 KiB), per-GPU figures and traced lines
        # are fields to read, not to print ten thousand of in a list
        return (
            f"CellRecord(index={self.index}, kind={self.kind!r}, "
            f"execution_count={self.execution_count}, label={clipped(self.label, 80)!r}, "
            f"status={self.status!r}, error={clipped(self.error, 80)!r}, "
            f"duration={self.duration!r}, "
            f"peak_allocated={self.peak_allocated}, rss_peak={self.rss_peak}, …)"
        )

    @property
    def nvml_unavailable(self) -> str:
        """The name of nbgpumon 0.1, read-only: :attr:`device_unavailable`."""
        return self.device_unavailable

    @property
    def rss_delta(self) -> int | None:
        return _delta(self.rss_before, self.rss_after)

    @property
    def name(self) -> str:
        """How views refer to it: ``[12]`` for a cell, ``[12] epoch 3`` for a region."""
        count = "?" if self.execution_count is None else str(self.execution_count)
        return f"[{count}]" if self.kind == "cell" else f"[{count}] {self.label}"

    @property
    def frameworks(self) -> list[str]:
        """The frameworks whose allocator this record measured, in first-seen order."""
        names = (f.framework for d in self.devices for f in d.frameworks)
        return list(dict.fromkeys(names))

    def framework_usage(self, framework: str) -> list[AllocatorUsage]:
        """``framework``'s figures on each GPU where it was measured."""
        return [f for d in self.devices for f in d.frameworks if f.framework == framework]

    def _sum(self, attr: str) -> int | None:
        values = [getattr(d, attr) for d in self.devices]
        values = [v for v in values if v is not None]
        return sum(values) if values else None

    @property
    def allocated_delta(self) -> int | None:
        """Net allocator change over all GPUs, bytes."""
        return self._sum("allocated_delta")

    @property
    def allocated_total(self) -> int | None:
        return self._sum("allocated_total")

    @property
    def retained(self) -> int | None:
        return self._sum("retained")

    @property
    def peak_allocated(self) -> int | None:
        """Highest per-GPU allocator peak, bytes."""
        values = [d.peak_allocated for d in self.devices if d.peak_allocated is not None]
        return max(values) if values else None

    @property
    def peak_exact(self) -> bool:
        """True unless some GPU's peak is only a sampled lower bound."""
        return all(d.peak_exact for d in self.devices if d.peak_allocated is not None)

    @property
    def util_mean(self) -> float | None:
        values = [d.util_mean for d in self.devices if d.util_mean is not None]
        return sum(values) / len(values) if values else None

    @property
    def util_max(self) -> float | None:
        values = [d.util_max for d in self.devices if d.util_max is not None]
        return max(values) if values else None


def records_after(records: Sequence[CellRecord], index: int) -> tuple[int, list[CellRecord]]:
    """The index of the oldest of ``records`` (0 when there is none) and those newer than
    ``index``, oldest first: a walk from the newest, so its cost is the new records', not the
    ledger's."""
    newer: list[CellRecord] = []
    for record in reversed(records):
        if record.index <= index:
            break
        newer.append(record)
    newer.reverse()
    return (records[0].index if records else 0), newer


def record_from_dict(d: dict) -> CellRecord:
    """The inverse of ``dataclasses.asdict(record)`` (as a recording stores it)."""
    fields = dict(d)
    fields["devices"] = tuple(_device_from_dict(device) for device in fields.get("devices", ()))
    retention = fields.get("retention")
    if retention is not None:
        holders = tuple((str(name), int(size)) for name, size in retention.get("holders", ()))
        note = scan_cut_from_json(retention.get("note"))
        fields["retention"] = Retention(retention["device"], holders, note)
    fields["traced"] = traced_from_json(fields.get("traced", ()))  # (lines before schema 7)
    fields["traced_peak"] = traced_from_json(fields.get("traced_peak", ()))
    fields["children"] = tuple(child_from_dict(c) for c in fields.get("children", ()))
    for old, new in _OLD_RECORD_NAMES.items():
        if old in fields:
            fields[new] = fields.pop(old)
    return CellRecord(**fields)


def _device_from_dict(d: dict) -> DeviceUsage:
    fields = dict(d)
    for old, new in _OLD_DEVICE_NAMES.items():
        if old in fields:
            fields[new] = fields.pop(old)
    given = fields.pop("frameworks", None)
    if given is None and fields.get("allocated_after") is not None:
        # a recording from before per-framework figures: they were one built-in's (torch's)
        given = [{
            "framework": unnamed_figures_owner(), **{k: fields.get(k) for k in _FRAMEWORK_FIELDS},
            "peak_exact": bool(fields.get("peak_exact")),
        }]  # fmt: skip
    frameworks = tuple(AllocatorUsage(**f) for f in given or ())
    for name in ("kinds_before", "kinds_after"):  # (JSON lists; none before schema 6)
        fields[name] = tuple((str(kind), int(size)) for kind, size in fields.get(name, ()))
    fields["kinds_note"] = kinds_notes_from_json(fields.get("kinds_note"))  # (text before 7)
    return DeviceUsage(**fields, frameworks=frameworks)


def unnamed_figures_owner() -> str:
    """The framework whose figures a recording from before per-framework figures holds."""
    return next((f.name for f in frameworks() if f.owns_unnamed_figures), "")


_FRAMEWORK_FIELDS = (
    "allocated_before", "allocated_after", "reserved_before", "reserved_after",
    "peak_allocated", "allocated_total",
)  # fmt: skip
# What recordings made before the device-source protocol call a field (a record's JSON is
# ``asdict`` of it): frozen, as those files are.
_OLD_RECORD_NAMES = {"nvml_unavailable": "device_unavailable"}
_OLD_DEVICE_NAMES = {
    "nvml_index": "index",
    "nvml_used_before": "device_used_before",
    "nvml_used_after": "device_used_after",
}
