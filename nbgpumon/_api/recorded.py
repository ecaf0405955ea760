"""``Recorded`` is one session read back from a recording, with the same views as the live
``Monitor``. What ``nbgpumon.load(PATH)`` returns."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._foundation.windows import Chunk, Window
from .._ledger.records import CellRecord, records_after
from .._recording.reader import RecordedSession
from .._recording.reader import load as read_session
from .._session.facts.session_data import Cluster, Device, MigInstance, RunningCell, Status
from .._session.facts.status import RecordedStatus
from .._views.frames import cells_frame, samples_frame, write_frames
from .._views.reprs.recorded import recorded_html, recorded_text
from .._views.widget.live_chart import GPUMonWidget, Publisher
from .._views.words.advice import advise, hints_text, recorded_evidence
from .short_lists import CellList

if TYPE_CHECKING:
    import pandas

    from .explain import CellExplanation


@dataclasses.dataclass(frozen=True)
class Recorded(RecordedSession):
    """Everything one session wrote, and its views: the frames have the same shape as the
    live monitor's, so a recording and the session that made it compare equal."""

    @classmethod
    def of(cls, data: RecordedSession) -> Recorded:
        return cls(**{f.name: getattr(data, f.name) for f in dataclasses.fields(data)})

    @property
    def damage(self) -> str:
        """For a file cut short: how, and what could not be read, in one line ("" when the
        file was whole)."""
        from .._views.status.damage import damage_line

        return damage_line(self.lost) if self.lost is not None else ""

    def samples_frame(self, ranges: bool = False) -> pandas.DataFrame:
        """One row per sample: ``time`` (UTC) and one column per timeline column. Samples
        older than the recording's raw window come as one row per 1 min bucket: its start and
        its means. ``ranges``: also ``samples`` (how many samples a row stands for, 1 for a raw
        one) and each column's bucket minimum and maximum, as ``{column}.min`` /
        ``{column}.max`` (a raw sample's own value)."""
        frame = samples_frame(self.times, self.values, self.columns)
        if ranges:
            low, high = self._ranges()
            frame["samples"] = self._counts()
            for k, column in enumerate(self.columns):
                frame[f"{column}.min"] = low[:, k]
                frame[f"{column}.max"] = high[:, k]
        return frame

    def _ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's minima and maxima: a bucket's extremes, a raw sample's value."""
        low = self.low if self.low is not None else self.values
        return low, self.high if self.high is not None else self.values

    def _counts(self) -> np.ndarray:
        if self.sample_counts is not None:
            return self.sample_counts
        return np.ones(len(self.times), dtype=np.int64)

    def cells_frame(self) -> pandas.DataFrame:
        return cells_frame(self.records)

    def cells(self) -> list[CellRecord]:
        """The recording's cells and regions: those that ended after it started, as every
        view of it counts them. The kernel's earlier ones, which the file keeps too, are
        ``earlier``."""
        return CellList(self.records)

    # -- what a cell ending with it shows: a few lines, however many samples it holds ---
    def __repr__(self) -> str:
        return recorded_text(self, self.cells(), self.status().interval)

    def _repr_html_(self) -> str:
        return recorded_html(self, self.cells(), self.status().interval)

    def explain(self, cell: int) -> CellExplanation:
        """Cell ``cell``'s GPU memory by what it is, at its end and at its peak (as
        ``nbgpumon.explain(cell=N)``); a UsageError for a cell recorded without it."""
        from .explain import explain_recorded_cell

        return explain_recorded_cell(reversed(self.records), cell)

    # -- SessionData: what views read (the live chart too) ------------------------------
    @property
    def source(self) -> str:
        return f"{self.path} (session {self.session_id})"

    @property
    def devices(self) -> tuple[Device, ...]:
        return tuple(
            Device(
                index=int(g.get("index", i)),
                name=str(g.get("name", "")),
                memory_total=g.get("memory_total"),
                cuda_index=g.get("cuda_index"),
                uuid=str(g.get("uuid", "")),
                cuda_known="cuda_index" in g,  # else None would read as hidden
                mig=MigInstance.recorded(g.get("mig")),
            )
            for i, g in enumerate(self.gpus)
        )

    def records_after(self, index: int) -> tuple[int, list[CellRecord]]:
        return records_after(self.records, index)

    @property
    def cursor(self) -> int:
        return len(self.times)

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        """The recorded samples in ``[t0, t1]``, of ``columns`` (all by default)."""
        # times ascend (buckets, then raw samples): a slice, so that the whole is not copied
        start = int(np.searchsorted(self.times, t0, side="left"))
        rows = slice(start, max(start, int(np.searchsorted(self.times, t1, side="right"))))
        picked = [self.columns.index(c) for c in columns] if columns is not None else slice(None)
        # float64, as read: the advisor's numbers stay exact; buckets bring their extremes
        mean = self.values[rows, picked]
        if self.low is None:
            return Window(self.times[rows], mean, mean, mean)
        low, high = self._ranges()
        return Window(self.times[rows], mean, low[rows, picked], high[rows, picked])

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        """The recorded samples from ``cursor`` on: a recording's only news is what it holds."""
        start = max(0, min(cursor, len(self.times)))
        end = len(self.times) if limit is None else min(len(self.times), start + limit)
        values = self.values[start:end].astype(np.float32)
        return Chunk(start, end, self.times[start:end], values, gap=False)

    def latest(self) -> dict[str, float] | None:
        if not len(self.times):
            return None
        out = dict(zip(self.columns, self.values[-1].tolist(), strict=True))
        out["time"] = float(self.times[-1])
        return out

    def running(self) -> RunningCell | None:
        return None  # a recording holds finished cells only

    def status(self) -> Status:
        raw = self.times[self.buckets :]  # the interval is the raw samples'
        span = float(raw[-1] - raw[0]) if len(raw) > 1 else 0.0
        interval = span / (len(raw) - 1) if len(raw) > 1 else 0.0
        recorded = RecordedStatus(
            self.source,
            len(raw),
            self.buckets,
            self.lost,
            self.host or "",
            self.driver or "",
            tuple(self.devices),
        )
        return Status("recorded", round(interval, 3), recorded=recorded)

    @property
    def cluster(self) -> Cluster | None:
        if self.nodes is None:
            return None
        return Cluster(self.nodes, self.cluster_server)

    def subscribe(self, callback: Callable[[int], None]) -> Callable[[], None]:
        return lambda: None  # nothing more arrives

    def widget(self) -> GPUMonWidget:
        """The live chart, showing this recording: its timeline, cell bands, marks and table.
        Nothing more arrives, so nothing keeps it updating."""
        return Publisher(self, GPUMonWidget(self)).widget

    def report(self) -> Any:
        """The interactive bqplot report of this session (an ipywidget)."""
        from .._views.report.bqplot_report import report_widget  # bqplot: imported when asked for

        return report_widget(self)

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        return hints_text(advise(recorded_evidence(self)))

    def report_html(self) -> str:
        """A self-contained HTML page of this session (no network needed to open it)."""
        from .._views.report.page import session_html

        return session_html(self)

    def export(self, directory: str | Path, fmt: str = "csv") -> list[Path]:
        """Write ``samples`` and ``cells`` as CSV (or Parquet, with pyarrow) into ``directory``."""
        return write_frames(
            {"samples": self.samples_frame(), "cells": self.cells_frame()}, directory, fmt
        )


def load_recorded(path: str | Path, session: int | None = None) -> Recorded:
    """One session (the newest by default) of the recording at ``path``; see ``nbgpumon.load``."""
    return Recorded.of(read_session(path, session))
