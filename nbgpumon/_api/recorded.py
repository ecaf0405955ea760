"""``Recorded``: one session read back from a recording, with the same views as the live
``Monitor``. What ``nbgpumon.load(PATH)`` returns."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._ledger.records import CellRecord
from .._recording.reader import RecordedSession
from .._recording.reader import load as read_session
from .._sampling.timeline import Window
from .._views.advisor import advise, hints_text, recorded_evidence
from .._views.frames import cells_frame, samples_frame, write_frames

if TYPE_CHECKING:
    import pandas


@dataclasses.dataclass(frozen=True)
class Recorded(RecordedSession):
    """Everything one session wrote, and its views: the frames have the same shape as the
    live monitor's, so a recording and the session that made it compare equal."""

    @classmethod
    def of(cls, data: RecordedSession) -> Recorded:
        return cls(**{f.name: getattr(data, f.name) for f in dataclasses.fields(data)})

    def samples_frame(self) -> pandas.DataFrame:
        """One row per sample: ``time`` (UTC) and one column per timeline column."""
        return samples_frame(self.times, self.values, self.columns)

    def cells_frame(self) -> pandas.DataFrame:
        return cells_frame(self.records)

    def cells(self) -> list[CellRecord]:
        return list(self.records)

    def window(self) -> Window:
        v = self.values.astype(np.float32)
        return Window(self.times, v, v, v)

    def report(self) -> Any:
        """The interactive bqplot report of this session (an ipywidget)."""
        from .._views.report import report_widget  # bqplot: imported when asked for

        return report_widget(self)

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        return hints_text(advise(recorded_evidence(self)))

    def report_html(self) -> str:
        """A self-contained HTML page of this session (no network needed to open it)."""
        from .._views.report_html import session_html

        return session_html(self)

    def export(self, directory: str | Path, fmt: str = "csv") -> list[Path]:
        """Write ``samples`` and ``cells`` as CSV (or Parquet, with pyarrow) into ``directory``."""
        return write_frames(
            {"samples": self.samples_frame(), "cells": self.cells_frame()}, directory, fmt
        )


def load_recorded(path: str | Path, session: int | None = None) -> Recorded:
    """One session (the newest by default) of the recording at ``path``; see ``nbgpumon.load``."""
    return Recorded.of(read_session(path, session))
