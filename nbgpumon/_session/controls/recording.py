"""A session's recording: the writer started, replaced and stopped, what it met told once at
a cell's end (as facts: ``_recording/notices.py``), and GPUMon.record_path kept saying where it
records."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._recording.notices import Notice, RecorderState, RecordingChange

if TYPE_CHECKING:
    from ..._ledger.records import CellRecord
    from ..._recording.writer import RecordingWriter
    from ..._sampling.node_timeline import NodeTimeline
    from ..._sampling.timeline import Timeline
    from ..config import GPUMon


class RecordingControl:
    """One session's recorder (the writer is imported on first use: SQLite, its thread)."""

    def __init__(
        self,
        config: GPUMon,
        timeline: Timeline,
        info: Callable[[], dict[str, Any]],
        nodes: Callable[[], tuple[NodeTimeline, str] | None],
    ) -> None:
        self.config, self.timeline = config, timeline
        self._info, self._nodes = info, nodes  # the session's facts; other nodes' samples
        self.writer: RecordingWriter | None = None
        self._untold: list[Notice] = []  # a replaced recorder's notices, not yet told
        self.syncing = False  # set while this writes GPUMon.record_path

    def record(
        self,
        path: str | os.PathLike[str] | None,
        cells: Sequence[CellRecord],
        marks: Sequence[tuple[float, str]],
    ) -> RecordingChange:
        """Record to ``path`` from now on, ``cells`` and ``marks`` first (None: stop); see
        ``Session.record``. What it did back; a RecordingError leaves what ran untouched."""
        if path is None:
            if self.writer is None:
                return RecordingChange(False, None)
            old, self.writer = self.writer, None
            old.stop()
            stopped = old.stopped()
            self._untold += [n for n in old.take_notices() if n != stopped.fault]
            self.sync_path("")
            return stopped
        from ..._recording.writer import RecordingWriter

        # checks and opens the new file before the old one stops
        new = RecordingWriter(
            path,
            self.timeline,
            self._info(),
            nodes=self._nodes,
            raw_seconds=self.config.record_raw_seconds,
        )
        if self.writer is not None:
            self.writer.stop()
            self._untold += self.writer.take_notices()
        self.writer = new
        new.start(list(cells), list(marks))
        self.sync_path(str(new.path))
        return RecordingChange(True, new.path, new.session_id, new.created_folder)

    @property
    def state(self) -> RecorderState | None:
        """What the recorder is doing (None when there is none)."""
        return self.writer.state if self.writer is not None else None

    def tell(self) -> RecorderState | None:
        """:attr:`state`, for a line printed now (main thread): the notice it says is then
        not said again at the cell's end."""
        state = self.state
        if self.writer is not None and state is not None:
            self._untold += [n for n in self.writer.take_notices() if n != state.last]
        return state

    def notices(self) -> list[Notice]:
        """What the writer's thread met since the last call (invariant 14: said once, at the
        end of the cell during which it happened, or of the next one)."""
        told, self._untold = self._untold, []
        if self.writer is not None:
            told += self.writer.take_notices()
        return told

    def add_cell(self, record: CellRecord) -> None:
        if self.writer is not None:
            self.writer.add_cell(record)

    def update_cell(self, record: CellRecord) -> None:
        """A record already recorded, brought up to date (its children's newest figures)."""
        if self.writer is not None:
            self.writer.update_cell(record)

    def add_mark(self, time: float, label: str) -> None:
        if self.writer is not None:
            self.writer.add_mark(time, label)

    def stop(self) -> None:
        """Stop for good (after the sampler: its last rows are written too)."""
        if self.writer is not None:
            self.writer.stop()
            self.writer = None

    def sync_path(self, path: str) -> None:
        """GPUMon.record_path says where this session records, however it was started; the
        flag keeps the session's observer from acting on this write."""
        self.syncing = True
        try:
            self.config.record_path = path
        finally:
            self.syncing = False
