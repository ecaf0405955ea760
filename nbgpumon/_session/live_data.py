"""``LiveData`` is what views read of the live session (the ``SessionData`` protocol), over its
timeline, ledger, device source, sampler and cluster. The session makes one (``session.data``) and
the monitor shows it; views read it only when they draw, never on the sampler's tick."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .._foundation.metrics import metric
from .._ledger.ledger import Ledger
from .._ledger.records import CellRecord
from .._sampling.sampler import Sampler
from .._sampling.timeline import Timeline
from .._sources.devices.protocol import DeviceSource
from .controls.cluster import ClusterControl
from .facts.session_data import Cluster, Device, MigInstance, RunningCell, Status

if TYPE_CHECKING:
    from .._foundation.windows import Chunk, Window

RSS = metric("host", "rss")


class LiveData:
    """The live session as every view reads it (``SessionData``): one per session."""

    source = "live session"

    def __init__(
        self,
        devices: DeviceSource,
        timeline: Timeline,
        ledger: Ledger,
        sampler: Sampler,
        cluster: ClusterControl,
        status: Callable[[], Status],
        finish_pending: Callable[[], None] = lambda: None,
    ) -> None:
        self._devices, self._timeline, self._ledger = devices, timeline, ledger
        self._sampler, self._cluster, self._status = sampler, cluster, status
        # the last cell's record, where its end was put off until after its reply (main thread)
        self._finish_pending = finish_pending
        self._mem_used = metric(devices.name, "mem_used")

    @property
    def devices(self) -> tuple[Device, ...]:
        source = self._devices
        return tuple(
            Device(
                d.index,
                d.name,
                d.memory_total,
                d.cuda_index,
                d.uuid,
                mig=None if d.mig is None else MigInstance(**dataclasses.asdict(d.mig)),
                unavailable=source.unavailable(d.index),
            )
            for d in source.devices
        )

    @property
    def columns(self) -> tuple[str, ...]:
        return self._timeline.columns

    @property
    def records(self) -> list[CellRecord]:
        self._finish_pending()
        return self._ledger.records()

    def records_after(self, index: int) -> tuple[int, list[CellRecord]]:
        return self._ledger.records_after(index)

    @property
    def marks(self) -> list[tuple[float, str]]:
        return list(self._ledger.marks)

    @property
    def cursor(self) -> int:
        return self._timeline.cursor

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        return self._timeline.window(t0, t1, columns)

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        return self._timeline.since(cursor, limit)

    def latest(self) -> dict[str, float] | None:
        return self._timeline.latest()

    def running(self) -> RunningCell | None:
        """The cell being measured now, with its start readings by timeline column: each
        allocator's allocated bytes (0 when it was not up yet), the device's used bytes, RSS."""
        ledger = self._ledger
        opened = ledger.open_cell()
        if opened is None:
            return None
        baseline: dict[str, int] = {}
        for d in self._devices.devices:
            at = d.index
            used = opened.device_used[at] if at < len(opened.device_used) else None
            if used is not None:
                baseline[self._mem_used.column(at)] = used
            if d.cuda_index is None:
                continue
            for source in ledger.allocators:
                stats = opened.allocators.get(source.name, {}).get(d.cuda_index)
                # no stats at the start: the allocator held nothing (as the ledger counts it)
                allocated = metric(source.name, "allocated").column(at)
                baseline[allocated] = stats.allocated if stats else 0
        if opened.rss is not None:
            baseline[RSS.column()] = opened.rss
        count = opened.execution_count
        name = f"[{'?' if count is None else count}]"
        return RunningCell(name, count, opened.kind, opened.label, opened.start, baseline)

    def status(self) -> Status:
        return self._status()

    @property
    def cluster(self) -> Cluster | None:
        return self._cluster.cluster()

    def subscribe(self, callback: Callable[[int], None]) -> Callable[[], None]:
        return self._sampler.subscribe(callback)
