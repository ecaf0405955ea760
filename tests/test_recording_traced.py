"""A cell's traced allocations in the recording (schema 7): written as data, in the cell's JSON
record and as the flat ``traced`` column's JSON list, loaded back as the same dataclasses and
shown in the same words; a session of an older schema keeps its lines of text, shown as they
are."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from pathlib import Path

from test_recording_children import COLUMNS, INFO, _cell, _write

import nbgpumon
from nbgpumon._ledger.records import CellRecord
from nbgpumon._ledger.traced import ReplayCut, TracedAllocation
from nbgpumon._recording.writer import RecordingWriter
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._session.cell_pipeline import CellOutcome
from nbgpumon._views.cell_end import trace_lines

MIB, GIB = 2**20, 2**30
KEPT = TracedAllocation(2 * GIB, 1, 0, 5, 2, "big = torch.empty(2**31)", None, None)
CALLED = TracedAllocation(3 * MIB, 3, 1, 3, 5, "return torch.empty(n)", 5, 4)
FREED = TracedAllocation(GIB, 1, 0, 5, 3, "h = big * 2", None, None)
KEPT_LINES = [
    "[5] line 2: big = torch.empty(2**31) — 2.0 GiB",
    "[5] line 4 → [3] line 5: return torch.empty(n) — 3.0 MiB in 3 blocks on cuda:1",
]
PEAK_LINES = [
    "[5] line 3: h = big * 2 — 1.0 GiB",
    "(the recorder's history (1,200 events) does not reach back to the peak)",
]


def _recorded(path: Path, cell: CellRecord) -> None:
    writer = RecordingWriter(path, Timeline(COLUMNS), INFO)
    writer.add_cell(cell)
    _write(writer, path)


def test_traced_allocations_are_recorded_as_data_and_load_back_in_the_same_words(tmp_path):
    path = tmp_path / "traced.sqlite"
    cell = dataclasses.replace(
        _cell(4), traced=(KEPT, CALLED), traced_peak=(FREED, ReplayCut(1, 1200))
    )
    _recorded(path, cell)
    recorded = nbgpumon.load(path)
    (loaded,) = recorded.records
    assert loaded == cell  # the dataclasses, not lines
    with contextlib.closing(sqlite3.connect(path)) as db:
        (flat,) = db.execute("SELECT traced FROM cells").fetchone()
    assert json.loads(flat) == [dataclasses.asdict(KEPT), dataclasses.asdict(CALLED)]
    assert trace_lines(CellOutcome(loaded)) == [
        *(f"nbgpumon trace: {line}" for line in KEPT_LINES),
        *(f"nbgpumon trace, freed after its peak: {line}" for line in PEAK_LINES),
    ]
    frame = recorded.cells_frame()
    assert frame["traced"][0] == "\n".join(KEPT_LINES)
    assert frame["traced_peak"][0] == "\n".join(PEAK_LINES)


def test_a_cell_without_traced_allocations_has_an_empty_traced_column(tmp_path):
    path = tmp_path / "untraced.sqlite"
    _recorded(path, _cell(0))
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT traced FROM cells").fetchone() == ("",)
    (loaded,) = nbgpumon.load(path).records
    assert loaded.traced == () and loaded.traced_peak == ()


def test_a_session_before_schema_7_keeps_its_trace_lines_and_shows_them_as_they_are(tmp_path):
    path = tmp_path / "v6.sqlite"
    _recorded(path, dataclasses.replace(_cell(4), traced=(KEPT,)))
    old_peak = [PEAK_LINES[0], "(the recorder kept no history of allocations)"]
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # as schema 6 wrote it: lines
        (text,) = db.execute("SELECT record FROM cells").fetchone()
        record = {**json.loads(text), "traced": KEPT_LINES, "traced_peak": old_peak}
        db.execute(
            "UPDATE cells SET traced = ?, record = ?", ("\n".join(KEPT_LINES), json.dumps(record))
        )
        db.execute("UPDATE session SET schema = 6")
    recorded = nbgpumon.load(path)
    (loaded,) = recorded.records
    assert loaded.traced == tuple(KEPT_LINES) and loaded.traced_peak == tuple(old_peak)
    assert trace_lines(CellOutcome(loaded)) == [
        *(f"nbgpumon trace: {line}" for line in KEPT_LINES),
        *(f"nbgpumon trace, freed after its peak: {line}" for line in old_peak),
    ]
    frame = recorded.cells_frame()
    assert frame["traced"][0] == "\n".join(KEPT_LINES)
    assert frame["traced_peak"][0] == "\n".join(old_peak)
