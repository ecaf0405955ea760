"""How counts and negative figures read: "1 sample", never "1 samples"; a negative figure in
words takes the chart's minus sign (U+2212) in the text views as in the browser, while what
machines read (CSV, frames) keeps plain numbers."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from nbgpumon._api.recorded import Recorded
from nbgpumon._forensics.holder_scan import Holder, HolderScan
from nbgpumon._foundation.wording import MINUS, counted, format_bytes, format_percent
from nbgpumon._ledger.records import CellRecord
from nbgpumon._session.facts.status import RecordedStatus, Status
from nbgpumon._views.memory.holders import holders_text
from nbgpumon._views.status.session_status import status_line
from nbgpumon._views.words.cell_summary import summary_line
from nbgpumon._views.words.cells_table import cells_table

FORMAT_JS = Path(__file__).resolve().parents[1] / "js" / "src" / "format.js"
MIB = 2**20


def test_a_count_is_one_thing_or_many():
    assert counted(1, "sample") == "1 sample"
    assert counted(0, "sample") == "0 samples"
    assert counted(1_200, "sample") == "1,200 samples"
    assert counted(1, "process", "processes") == "1 process"
    assert counted(3, "process", "processes") == "3 processes"


def test_a_recording_of_one_sample_and_a_scan_of_one_holder_say_so():
    recorded = RecordedStatus("run.sqlite (session 1)", 1, 1, None, "node-a", "", ())
    assert status_line(Status("recorded", 0.1, recorded=recorded)) == (
        "recorded: run.sqlite (session 1), 1 sample, and 1 bucket of the older ones"
    )
    scan = HolderScan("host", (Holder("x", MIB, 1, False),), MIB, 1, 0.001, None)
    assert holders_text(scan).splitlines()[:2] == [
        "nbgpumon holders of host memory: 1.0 MiB in 1 holder, 1 object looked at in 1 ms",
        "  x     1.0 MiB  1 storage",
    ]


def _freed_a_mebibyte() -> CellRecord:
    return CellRecord(
        index=0, kind="cell", execution_count=4, cell_id=None, label="del x", start=1.7e9,
        duration=0.25, status="ok", error="", devices=(), rss_before=3 * MIB,
        rss_after=2 * MIB, rss_peak=3 * MIB, rss_peak_exact=True,
    )  # fmt: skip


def test_a_negative_figure_in_words_takes_the_charts_minus_sign():
    # the widget's formatter (js/src/format.js) writes MINUS; the text views write the same
    assert re.search(r'export const MINUS = "\\u2212";', FORMAT_JS.read_text())
    assert MINUS == "\u2212"
    assert format_bytes(-MIB) == format_bytes(-MIB, signed=True) == "\u22121.0 MiB"
    assert format_bytes(MIB, signed=True) == "+1.0 MiB" and format_bytes(0, signed=True) == "0 B"
    assert format_percent(-40.2, signed=True) == "\u221240%"
    assert format_percent(-0.3, signed=True) == "0%"  # not "−0%"
    record = _freed_a_mebibyte()
    assert summary_line(record) == "[4] host \u22121.0 MiB · 250 ms"
    assert "\u22121.0 MiB" in cells_table([record]).text
    assert "-1.0" not in cells_table([record]).text + cells_table([record]).html


def test_files_for_machines_keep_plain_numbers(tmp_path):
    times = 1.7e9 + np.arange(3.0)
    session = Recorded(
        path=tmp_path / "run.sqlite", session_id=1, started=1.7e9, host="h", gpus=[],
        driver="", versions={}, columns=["host.rss"], times=times,
        values=np.array([[3.0 * MIB], [-1.0], [2.0 * MIB]]), records=[_freed_a_mebibyte()],
        marks=[],
    )  # fmt: skip
    cells, samples = (p.read_text() for p in sorted(session.export(tmp_path / "out")))
    assert MINUS not in cells + samples and (cells + samples).isascii()
    assert f",{-MIB}," in cells  # rss_delta, as a number
    assert ",-1.0\n" in samples  # a negative sample, as a number
