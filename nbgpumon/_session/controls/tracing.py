"""Allocation tracing and NVTX cell ranges: on, off and their state. It also holds the
``GPUMon.nvtx`` setting kept in step, a cell's range and traced allocations (what it left alive,
what its peak held and it freed), and the OOM flight record."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._forensics.tracing_answer import (
    ARMED,
    OFF,
    ON,
    WAS_NOT_ON,
    TracingAnswer,
    TracingState,
)
from ..._foundation.errors import failure_line
from ..._ledger.records import CellRecord
from ..._sources.frameworks import frameworks
from ..config import GPUMon
from ..facts.nvtx import ASKED_STATE, NvtxAnswer
from .nvtx_ranges import NvtxRanges, range_name

if TYPE_CHECKING:
    from ..._forensics.oom_snapshot import SnapshotStore
    from ..._forensics.peak_replay import PeakReplay
    from ..._forensics.tracing import AllocationTracer
    from ..._ledger.traced import TracedAllocation
    from .recording import RecordingControl

TRACE_MIN_BYTES = 2**20  # traced allocations smaller than this are not shown


class TracingControl:
    """The tracer (made on first ``trace(True)``) and the NVTX ranges of one session."""

    def __init__(
        self, config: GPUMon, shell: Callable[[], Any], recording: RecordingControl
    ) -> None:
        self.config = config
        self._shell = shell
        self._recording = recording  # where the OOM snapshot says the recording is
        self.nvtx_ranges = NvtxRanges(enabled=config.nvtx)
        self.tracer: AllocationTracer | None = None
        self._snapshots: SnapshotStore | None = None  # OOM snapshot files, made on first use
        self._cell_range: int | None = None  # the NVTX range of the running cell
        self._syncing_nvtx = False  # set while nvtx() writes GPUMon.nvtx
        self._error_shown = ""

    # -- allocation tracing ---------------------------------------------------------------
    def trace(self, on: bool) -> TracingAnswer:
        """Turn allocation tracing on or off; what that did."""
        if self.tracer is None:
            if not on:
                return TracingAnswer(WAS_NOT_ON)
            from ..._forensics.tracing import AllocationTracer

            self.tracer = AllocationTracer(self._shell())
        return self.tracer.start() if on else self.tracer.stop()

    @property
    def state(self) -> TracingState:
        """On, armed (waiting for CUDA) or off, and the last problem if any."""
        t = self.tracer
        if t is None:
            return TracingState(OFF)
        return TracingState(OFF if not t.armed else (ON if t.active else ARMED), t.error)

    @property
    def armed(self) -> bool:
        return self.tracer is not None and self.tracer.armed

    @property
    def active(self) -> bool:
        """Whether torch's recorder is on now (a cell that initialised CUDA turns it on at its
        end)."""
        return self.tracer is not None and self.tracer.active

    def cell_started(self, execution_count: int | None) -> None:
        """Note what is alive on the GPU before the cell (tracing on)."""
        if self.tracer is not None and self.tracer.armed:
            self.tracer.cell_started(execution_count)

    def cell_finished(self, execution_count: int | None) -> tuple[TracedAllocation, ...]:
        """What the cell allocated and left alive, by line, the shown ones (tracing on)."""
        if self.tracer is None or not self.tracer.armed:
            return ()
        return _shown(self.tracer.cell_finished(execution_count))

    def peak_replays(self, record: CellRecord) -> list[PeakReplay]:
        """Where the cell freed TRACE_MIN_BYTES or more of its exact peak before its end
        (tracing on): what the peak held and the cell freed, by line, per device."""
        tracer = self.tracer
        if tracer is None or not tracer.active:
            return []
        name = next((f.name for f in frameworks() if f.memory_history is tracer.history), "")
        figures = [
            (d.cuda_index, f.allocated_after, f.peak_allocated)
            for d in record.devices
            for f in d.frameworks
            if f.framework == name
            and d.cuda_index is not None
            and f.peak_exact
            and f.peak_allocated is not None
            and f.allocated_after is not None
            and f.peak_allocated - f.allocated_after >= TRACE_MIN_BYTES
        ]
        if not figures or tracer.max_entries <= 0:  # (no history of events kept)
            return []
        from ..._forensics.peak_replay import replay_to_peak

        compile_ = getattr(tracer.shell, "compile", None)
        filename_map = getattr(compile_, "_filename_map", None) or {}
        try:
            # the history's events carry what each allocation asked for, not its block's size:
            # the replay runs in those units where the framework counts them
            figures = [(d, *(tracer.requested_bytes(d) or (a, p))) for d, a, p in figures]
            snapshot = tracer.full_snapshot()  # (100-200 ms for torch's: only for such cells)
            count = record.execution_count
            replays = [
                replay_to_peak(snapshot, device, after, peak, filename_map, count)
                for device, after, peak in figures
            ]
        except Exception as exc:
            tracer.error = failure_line("replaying allocations to the cell's peak failed", exc)
            return []
        return [dataclasses.replace(r, found=_shown(r.found)) for r in replays]

    def oom_flight_record(self, shell: Any, record: CellRecord, traced: bool) -> dict[str, Any]:
        """The post-mortem's live blocks by line and its snapshot, saved or why not (OomFacts
        fields); ``traced``: whether the recorder was on while the cell ran."""
        from ..._forensics import oom_snapshot

        tracer = self.tracer
        if tracer is None or not tracer.armed:
            return {"snapshot": oom_snapshot.FlightRecord(oom_snapshot.NOT_TRACING)}
        if not traced or not tracer.active:
            return {"snapshot": oom_snapshot.FlightRecord(oom_snapshot.TRACING_NOT_YET)}
        if self._snapshots is None:
            self._snapshots = oom_snapshot.SnapshotStore()
        filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
        recorder = self._recording.writer
        found = oom_snapshot.flight_record(
            tracer.full_snapshot,
            self._snapshots,
            filename_map,
            record.execution_count,
            str(recorder.path) if recorder is not None else None,
            tracer.viewer,
        )
        return {"largest": found.largest, "snapshot": found}

    # -- NVTX ranges ----------------------------------------------------------------------
    def nvtx(self, on: bool | None) -> NvtxAnswer:
        """Turn NVTX cell ranges on or off (None: only look); what that did."""
        ranges = self.nvtx_ranges
        if on is None:
            return NvtxAnswer(ASKED_STATE, ranges.state)
        answer = ranges.start() if on else ranges.stop()
        self._sync_nvtx(ranges.enabled)
        return answer

    def nvtx_setting_changed(self, value: bool) -> NvtxAnswer | None:
        """What setting ``GPUMon.nvtx`` to ``value`` did (None for nbgpumon's own write)."""
        if self._syncing_nvtx:
            return None
        ranges = self.nvtx_ranges
        answer = ranges.start() if value else ranges.stop()
        if value and not ranges.enabled:
            self._sync_nvtx(False)  # the setting keeps saying what is done
        return answer

    def _sync_nvtx(self, on: bool) -> None:
        self._syncing_nvtx = True
        try:
            self.config.nvtx = on
        finally:
            self._syncing_nvtx = False

    def open_range(self, execution_count: int | None, source: str) -> None:
        """End the range of a cell whose end never came; open this cell's when on (its
        source's first line names it)."""
        if self._cell_range is not None:
            self.close_range()
        if self.nvtx_ranges.enabled:
            self._cell_range = self.nvtx_ranges.push(range_name(execution_count, source))

    def close_range(self) -> None:
        if self._cell_range is not None:  # (ranges off: a cell's edge makes no call here)
            self.nvtx_ranges.pop_to(self._cell_range)
            self._cell_range = None

    def range_error_news(self) -> str:
        """The NVTX ranges' last problem, once ("" when said already or none)."""
        error = self.nvtx_ranges.error
        if not error or error == self._error_shown:
            return ""
        self._error_shown = error
        return error

    def close(self) -> None:
        self.nvtx_ranges.close()


def _shown(found: Sequence[TracedAllocation]) -> tuple[TracedAllocation, ...]:
    """The traced allocations kept and shown: TRACE_MIN_BYTES or more (what a cell kept, what
    its peak held)."""
    return tuple(a for a in found if a.bytes >= TRACE_MIN_BYTES)
