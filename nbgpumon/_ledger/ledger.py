"""The ledger: a ``CellRecord`` for every executed cell and every ``track()`` region.

IPython's ``pre_run_cell`` / ``post_run_cell`` events bracket a cell; ``begin`` and ``end``
snapshot the counters on either side. Peaks are exact where the counters allow it:

* ``peak_mode="reset"`` restarts torch's peak counter (and Linux's peak-RSS mark) when a cell
  begins, so the peak read at its end covers that cell alone. A region nested in a cell
  carries the peak seen so far into the enclosing measurement before resetting, so both stay
  exact.
* ``peak_mode="preserve"`` never resets them. A cell's peak is exact when it raised the
  process-wide high-water mark; otherwise it is the highest value sampled, marked inexact.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from .._foundation.clock import wall_clock
from .._foundation.metrics import metric
from .._sampling.timeline import Timeline
from .._sources.allocator_columns import read_by_cuda_index
from .._sources.base import AllocatorSource, AllocatorStats
from .._sources.host import HostSource
from .._sources.nvml import NvmlSource
from .records import CellRecord, DeviceUsage, Retention

GPU_UTIL = metric("nvml", "gpu_util")
RSS = metric("host", "rss")
PEAK_MODES = ("reset", "preserve")
MAX_LABEL = 1000  # characters in a mark's or region's label: a line to read, not a payload


@dataclass
class Measurement:
    """A measurement in progress."""

    kind: str
    label: str
    execution_count: int | None
    cell_id: str | None
    start: float
    started: float  # perf_counter
    allocator: dict[int, AllocatorStats]  # by CUDA index, at the start
    nvml_used: list[int | None]
    rss: int | None
    rss_peak_start: int | None
    rss_reset: bool
    peak_reset: set[int] = field(default_factory=set)  # CUDA indices whose peak we reset
    carried_peak: dict[int, int] = field(default_factory=dict)  # peaks before a nested reset
    carried_rss_peak: int = 0


class Ledger:
    """Produces one immutable record per execution; keeps the newest ``capacity``."""

    def __init__(
        self,
        nvml: NvmlSource,
        allocator: AllocatorSource,
        host: HostSource,
        timeline: Timeline,
        peak_mode: str = "reset",
        capacity: int = 10_000,
    ) -> None:
        self.nvml, self.allocator, self.host, self.timeline = nvml, allocator, host, timeline
        self._allocated = metric(allocator.name, "allocated")
        self.peak_mode = peak_mode
        self._records: collections.deque[CellRecord] = collections.deque(maxlen=capacity)
        self._count = 0
        self._stack: list[Measurement] = []
        self.marks: collections.deque[tuple[float, str]] = collections.deque(maxlen=capacity)
        self.reset_notice_due = False  # set once, the first time torch's counters are reset
        self._reset_notice_given = False

    # -- reading --------------------------------------------------------------------------
    def records(self) -> list[CellRecord]:
        return list(self._records)

    # -- measuring ------------------------------------------------------------------------
    def begin(
        self, kind: str, label: str, execution_count: int | None = None, cell_id: str | None = None
    ) -> Measurement:
        """Snapshot the counters now; nest freely (a region inside a cell)."""
        allocator = self.read_allocator()
        host = self.host
        opened = Measurement(
            kind=kind,
            label=label,
            execution_count=execution_count,
            cell_id=cell_id,
            start=wall_clock(),
            started=time.perf_counter(),
            allocator=allocator,
            nvml_used=self.nvml.read_memory(),
            rss=host.rss(),
            rss_peak_start=None,
            rss_reset=False,
        )
        if self.peak_mode == "reset":
            for cuda, stats in allocator.items():
                for outer in self._stack:
                    outer.carried_peak[cuda] = max(
                        outer.carried_peak.get(cuda, 0), stats.peak_allocated
                    )
                if self.allocator.reset_peak(cuda):
                    opened.peak_reset.add(cuda)
                    if not self._reset_notice_given:
                        self.reset_notice_due = self._reset_notice_given = True
            if self._stack:  # keep the enclosing measurement's peak before restarting the mark
                peak_now = host.peak_rss() or 0
                for outer in self._stack:
                    outer.carried_rss_peak = max(outer.carried_rss_peak, peak_now)
            opened.rss_reset = host.reset_peak()
        if not opened.rss_reset:
            opened.rss_peak_start = host.peak_rss()
        self._stack.append(opened)
        return opened

    def end(
        self,
        opened: Measurement,
        status: str = "ok",
        error: str = "",
        execution_count: int | None = None,
    ) -> CellRecord:
        """Close a measurement begun with :meth:`begin` and store its record."""
        if opened in self._stack:
            # closing an outer measurement closes anything left open inside it
            del self._stack[self._stack.index(opened) :]
        end = wall_clock()
        duration = time.perf_counter() - opened.started
        after = self.read_allocator()
        used_after = self.nvml.read_memory()
        sampled = self.timeline.column_stats(self._sampled_columns(), opened.start, end)
        devices = tuple(
            self._device_usage(
                opened, d.nvml_index, d.cuda_index, d.name, after, used_after, sampled
            )
            for d in self.nvml.devices
        )
        rss_after = self.host.rss()
        rss_peak, rss_exact = self._rss_peak(opened, rss_after, sampled[RSS.column()])
        record = CellRecord(
            index=self._count,
            kind=opened.kind,
            execution_count=opened.execution_count if execution_count is None else execution_count,
            cell_id=opened.cell_id,
            label=opened.label,
            start=opened.start,
            duration=duration,
            status=status,
            error=error,
            devices=devices,
            rss_before=opened.rss,
            rss_after=rss_after,
            rss_peak=rss_peak,
            rss_peak_exact=rss_exact,
        )
        self._count += 1
        self._records.append(record)
        return record

    def annotate(
        self, record: CellRecord, retention: Retention | None, traced: tuple[str, ...] = ()
    ) -> CellRecord:
        """The record with who holds what it kept and its traced allocations; replaces it in
        the ledger."""
        updated = dataclasses.replace(record, retention=retention, traced=traced)
        for i in range(len(self._records) - 1, -1, -1):
            if self._records[i] is record:
                self._records[i] = updated
                break
        return updated

    def mark(self, label: str) -> None:
        """Remember a labelled instant (shown by views as a vertical marker)."""
        self.marks.append((wall_clock(), label))

    def open_cell(self) -> Measurement | None:
        """The innermost cell being measured now, or None between cells."""
        for opened in reversed(self._stack):
            if opened.kind == "cell":
                return opened
        return None

    def current_execution_count(self) -> int | None:
        """The execution count of the innermost open cell, for regions inside it."""
        opened = self.open_cell()
        return opened.execution_count if opened is not None else None

    # -- helpers --------------------------------------------------------------------------
    def _sampled_columns(self) -> list[str]:
        """What a record takes from the samples: utilization, the allocator's allocated bytes
        (a peak's lower bound where the counter can't say) and RSS."""
        gpus = [
            m.column(d.nvml_index) for d in self.nvml.devices for m in (GPU_UTIL, self._allocated)
        ]
        return [*gpus, RSS.column()]

    def read_allocator(self) -> dict[int, AllocatorStats]:
        """The allocator's counters by CUDA index; {} until its framework is up."""
        if not self.allocator.active():
            return {}
        return read_by_cuda_index(self.allocator, self.nvml.devices)

    def _device_usage(
        self,
        opened: Measurement,
        nvml_index: int,
        cuda: int | None,
        name: str,
        after: dict[int, AllocatorStats],
        used_after: list[int | None],
        sampled: dict[str, tuple[float, float] | None],
    ) -> DeviceUsage:
        util = sampled.get(GPU_UTIL.column(nvml_index))
        before_stats = opened.allocator.get(cuda) if cuda is not None else None
        after_stats = after.get(cuda) if cuda is not None else None
        # No stats at the start but some at the end: this cell initialised CUDA, and
        # before it the allocator held nothing.
        started_cold = before_stats is None and after_stats is not None
        peak, exact = None, False
        allocated_total = None
        if after_stats is not None:
            base = before_stats.allocated_total if before_stats else 0
            allocated_total = after_stats.allocated_total - base
            counter = after_stats.peak_allocated
            if started_cold or cuda in opened.peak_reset:
                peak, exact = max(counter, opened.carried_peak.get(cuda, 0)), True
            elif before_stats is not None and counter > before_stats.peak_allocated:
                peak, exact = counter, True  # this cell raised the process-wide mark
            else:
                seen = sampled.get(self._allocated.column(nvml_index))
                peak = max(
                    before_stats.allocated if before_stats else 0,
                    after_stats.allocated,
                    int(seen[1]) if seen else 0,
                )
        zero_if_cold = 0 if started_cold else None
        return DeviceUsage(
            nvml_index=nvml_index,
            cuda_index=cuda,
            name=name,
            allocated_before=before_stats.allocated if before_stats else zero_if_cold,
            allocated_after=after_stats.allocated if after_stats else None,
            reserved_before=before_stats.reserved if before_stats else zero_if_cold,
            reserved_after=after_stats.reserved if after_stats else None,
            nvml_used_before=_at(opened.nvml_used, nvml_index),
            nvml_used_after=_at(used_after, nvml_index),
            peak_allocated=peak,
            peak_exact=exact,
            allocated_total=allocated_total,
            util_mean=util[0] if util else None,
            util_max=util[1] if util else None,
        )

    def _rss_peak(
        self, opened: Measurement, rss_after: int | None, sampled: tuple[float, float] | None
    ) -> tuple[int | None, bool]:
        mark = self.host.peak_rss()
        if mark is not None and (
            opened.rss_reset or (opened.rss_peak_start is not None and mark > opened.rss_peak_start)
        ):
            return max(mark, opened.carried_rss_peak), True
        values = [v for v in (opened.rss, rss_after, sampled and int(sampled[1])) if v]
        return (max(values) if values else None), False


def _at(values: list[Any], index: int) -> Any:
    return values[index] if index < len(values) else None
