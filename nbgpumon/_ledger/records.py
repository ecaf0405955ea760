"""The ledger's immutable records: one per executed cell or tracked region."""

from __future__ import annotations

from dataclasses import dataclass


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


@dataclass(frozen=True, slots=True)
class DeviceUsage:
    """What one cell did on one GPU. Bytes unless named otherwise; None = not measured."""

    nvml_index: int
    cuda_index: int | None
    name: str
    allocated_before: int | None  # torch allocator, live tensors
    allocated_after: int | None
    reserved_before: int | None  # torch allocator, held from the driver
    reserved_after: int | None
    nvml_used_before: int | None  # the driver's view: every process on the device
    nvml_used_after: int | None
    peak_allocated: int | None  # highest allocated while the cell ran
    peak_exact: bool  # True: from torch's peak counter; False: a lower bound from samples
    allocated_total: int | None  # bytes handed out during the cell, freed or not
    util_mean: float | None  # percent, from the timeline
    util_max: float | None

    @property
    def allocated_delta(self) -> int | None:
        return _delta(self.allocated_before, self.allocated_after)

    @property
    def reserved_delta(self) -> int | None:
        return _delta(self.reserved_before, self.reserved_after)

    @property
    def nvml_used_delta(self) -> int | None:
        return _delta(self.nvml_used_before, self.nvml_used_after)

    @property
    def retained(self) -> int | None:
        """Allocator bytes this cell left behind (never negative)."""
        delta = self.allocated_delta
        return None if delta is None else max(0, delta)


@dataclass(frozen=True, slots=True)
class Retention:
    """Who holds what a cell newly retained (set when it kept more than the threshold)."""

    device: str  # "cuda" (the allocator's retained bytes) or "host" (resident memory)
    holders: tuple[tuple[str, int], ...]  # (holder name, bytes), biggest first
    note: str = ""  # e.g. the holder scan stopped early


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
    traced: tuple[str, ...] = ()  # with tracing on: what it left behind, by cell line

    @property
    def rss_delta(self) -> int | None:
        return _delta(self.rss_before, self.rss_after)

    @property
    def name(self) -> str:
        """How views refer to it: ``[12]`` for a cell, ``[12] epoch 3`` for a region."""
        count = "?" if self.execution_count is None else str(self.execution_count)
        return f"[{count}]" if self.kind == "cell" else f"[{count}] {self.label}"

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


def record_from_dict(d: dict) -> CellRecord:
    """The inverse of ``dataclasses.asdict(record)`` (as a recording stores it)."""
    fields = dict(d)
    fields["devices"] = tuple(DeviceUsage(**device) for device in fields.get("devices", ()))
    retention = fields.get("retention")
    if retention is not None:
        holders = tuple((str(name), int(size)) for name, size in retention.get("holders", ()))
        fields["retention"] = Retention(retention["device"], holders, retention.get("note", ""))
    fields["traced"] = tuple(fields.get("traced", ()))
    return CellRecord(**fields)
