"""Which files a recording goes into and what loading one does to it: only a new file or an
nbgpumon recording is written (anything else is refused, byte for byte untouched); a damaged
file is one RecordingError naming it, or, cut short, loads as far as it goes and says what was
lost; loading never writes to the file or beside it."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import unittest.mock
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from traitlets import TraitError

import nbgpumon
from nbgpumon import Monitor, RecordingError, RecordingNotFound
from nbgpumon._ledger.records import CellRecord
from nbgpumon._recording.compaction import BUCKET_SECONDS as WIDTH
from nbgpumon._recording.reader import load, sessions
from nbgpumon._recording.schema import APPLICATION_ID, SCHEMA_VERSION
from nbgpumon._recording.writer import RecordingWriter, open_database
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._session.config import GPUMon
from nbgpumon._views.status.damage import damage_line
from nbgpumon._views.status.session_status import status_line

from notebook_runner import fake_pynvml, run_cells

# Made by nbgpumon 0.1.0 (before the marker): %gpumon record, three cells, a mark, a region.
MADE_BY_0_1_0 = Path(__file__).parent / "data" / "recorded-by-0.1.0.sqlite"
# Made on the H200 on 2026-12-01 by notebooks/training.ipynb with schema 1 as written before the
# metric registry: the recording every later schema must still read.
MADE_ON_H200_V1 = Path(__file__).parent / "data" / "recorded-v1-h200.sqlite"
PAGE = 4096  # SQLite's default page size, which the recorder keeps


@contextlib.contextmanager
def left_alone(path: Path) -> Iterator[None]:
    """Assert that ``path``'s bytes, and the files beside it, are the same afterwards."""
    before = (path.read_bytes(), sorted(os.listdir(path.parent)))
    yield
    assert (path.read_bytes(), sorted(os.listdir(path.parent))) == before


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording of a real Monitor at 100 Hz, with regions and marks written all along,
    so that samples and cells share the file's pages as they do in a long session. One GPU,
    faked at NVML's boundary, so that each sample is two rows (gpu0 and host) as on a GPU
    machine, and a cut can fall between them."""
    path = tmp_path_factory.mktemp("recording") / "run.sqlite"
    gpu = fake_pynvml(devices=[{"name": "Fake H200", "used": 3 * 2**30, "total": 141 * 2**30}])
    mon = Monitor(GPUMon(interval=0.01), nvml_module=gpu)
    try:
        mon.start()
        mon.record(path)
        deadline = time.time() + 60
        i = 0
        while mon._session.recording_control.writer.rows_written < 400 and time.time() < deadline:
            with mon.track(f"region {i}"):
                i += 1
            if i % 10 == 0:
                mon.mark(f"mark {i}")
            time.sleep(0.01)
        assert mon._session.recording_control.writer.rows_written >= 400
        mon.record(None)
    finally:
        mon.close()
    assert not list(path.parent.glob("run.sqlite-*"))  # closed: no log beside it
    return path


def _sqlite_file(sql: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.executescript(sql)

    return make


FOREIGN = {
    "another program's tables": (
        _sqlite_file(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO meta VALUES ('schema_version', '42');"
            "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');"
        ),
        "an SQLite file with the tables meta, users",
    ),
    "another program's application_id": (
        _sqlite_file("PRAGMA application_id = 7; CREATE TABLE session (id INTEGER);"),
        "an SQLite file of another program, application_id 7",
    ),
    "tables named like a recording's": (
        _sqlite_file(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO meta VALUES ('schema_version', '1');"
            "CREATE TABLE session (id INTEGER); CREATE TABLE samples (session, time, device);"
            "CREATE TABLE cells (x); CREATE TABLE marks (y);"
        ),
        "its tables differ from those nbgpumon writes",
    ),
    "a CSV": (lambda path: path.write_text("time,rss\n1,2\n"), "it is not an SQLite file"),
}


@pytest.mark.parametrize("kind", FOREIGN)
def test_a_file_that_is_not_a_recording_is_refused_in_one_line_and_left_byte_for_byte(
    tmp_path, kind
):
    make, why = FOREIGN[kind]
    path = tmp_path / "app.sqlite"
    make(path)
    mon = Monitor()
    try:
        with left_alone(path), pytest.raises(RecordingError) as refused:
            mon.record(path)
        assert str(refused.value) == (
            f"cannot record to {path}: it is not an nbgpumon recording ({why}); "
            "record to a new file instead"
        )
        assert mon.recording == ""
    finally:
        mon.close()


def test_new_and_empty_files_get_the_marker_and_a_0_1_0_recording_gets_a_session(tmp_path):
    empty, old = tmp_path / "empty.sqlite", tmp_path / "old.sqlite"
    empty.write_bytes(b"")  # nothing to lose: counts as new
    shutil.copy(MADE_BY_0_1_0, old)
    mon = Monitor()
    try:
        assert mon.record(empty) == f"recording to {empty} (session 1)"
        assert mon.record(old) == f"recording to {old} (session 2)"
        mon.record(None)
    finally:
        mon.close()
    for path in (empty, old):
        uri = f"{path.as_uri()}?mode=ro&immutable=1"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
            meta = dict(db.execute("SELECT key, value FROM meta"))
        assert meta == {"schema_version": str(SCHEMA_VERSION), "format": "nbgpumon"}
    assert sessions(old) == [1, 2]
    assert [m for _, m in load(old, session=1).marks] == ["made by 0.1.0"]


def test_a_recording_made_by_0_1_0_loads_and_nothing_is_written_to_it_or_beside_it(tmp_path):
    path = tmp_path / "old.sqlite"
    shutil.copy(MADE_BY_0_1_0, path)
    with left_alone(path):
        session = nbgpumon.load(path)
        assert sessions(path) == [1]
    assert len(session.times) == 6 and session.damage == ""
    assert "x = bytearray(2**20)" in [r.label for r in session.records]
    assert [r.label for r in session.records if r.kind == "region"] == ["a region"]
    assert {(r.source, r.source_hash) for r in session.records} == {("", None)}  # none then
    assert [m for _, m in session.marks] == ["made by 0.1.0"]


def test_a_schema_1_recording_of_a_real_gpu_loads_whole_and_untouched(tmp_path):
    path = tmp_path / "h200.sqlite"
    shutil.copy(MADE_ON_H200_V1, path)
    with left_alone(path):
        session = nbgpumon.load(path)
    assert session.damage == "" and [g["name"] for g in session.gpus] == ["NVIDIA H200"]
    assert len(session.times) == 308
    statuses = {r.name: r.status for r in session.records}
    assert statuses["[9]"] == "oom" and len(statuses) == 13
    assert [r.label for r in session.records if r.kind == "region"] == [
        "epoch 0", "epoch 1", "epoch 2"
    ]  # fmt: skip
    allocated = session.values[:, session.columns.index("gpu0.torch.allocated")]
    busy = session.values[:, session.columns.index("gpu0.nvml.gpu_util")]
    assert 11 * 2**30 < np.nanmax(allocated) < 13 * 2**30  # the model, AdamW state, data
    assert np.nanmax(busy) == 100.0
    assert [label for _, label in session.marks] == ["training done"]


def test_a_schema_1_file_gets_a_schema_2_session_and_both_load_under_today_s_names(tmp_path):
    path = tmp_path / "h200.sqlite"
    shutil.copy(MADE_ON_H200_V1, path)
    mon = Monitor(nvml_module=fake_pynvml(devices=[{"name": "Fake H200", "used": 3 * 2**30}]))
    try:
        assert mon.record(path) == f"recording to {path} (session 2)"
        mon._session.sampler.tick()  # at least one sample, whatever the thread has done
        mon.record(None)
    finally:
        mon.close()
    old, new = nbgpumon.load(path, session=1), nbgpumon.load(path, session=2)
    assert "gpu0.nvml.mem_used" in old.columns and "gpu0.torch.allocated" in old.columns
    assert all(c.startswith(("gpu0.nvml.", "gpu0.torch.", "host.")) for c in old.columns)
    assert len(old.times) == 308
    used = new.values[:, new.columns.index("gpu0.nvml.mem_used")]
    assert np.nanmax(used) == 3 * 2**30
    uri = f"{path.as_uri()}?mode=ro&immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        described = dict(db.execute("SELECT name, unit FROM metrics"))
        schemas = [s for (s,) in db.execute("SELECT schema FROM session ORDER BY id")]
    assert described["nvml_mem_used"] == "bytes" and described["host_rss"] == "bytes"
    assert schemas == [None, SCHEMA_VERSION]


def test_loading_a_closed_recording_writes_nothing_to_it_or_beside_it(recording):
    with left_alone(recording):
        session = nbgpumon.load(recording)
    assert len(session.times) >= 400 and len(session.records) >= 10


def _garbage_in_the_middle(data: bytes) -> bytes:
    at = len(data) // 2 // PAGE * PAGE
    return data[:at] + b"\xa5" * 2 * PAGE + data[at + 2 * PAGE :]


DAMAGED = {
    "garbage in its tail": (
        lambda data: data[: -3 * PAGE] + b"\xa5" * 3 * PAGE,
        "is damaged (database disk image is malformed); it can't be read",
    ),
    "garbage in its middle": (
        _garbage_in_the_middle,
        "is damaged (database disk image is malformed); it can't be read",
    ),
    "a zeroed header": (
        lambda data: bytes(100) + data[100:],
        "is not an nbgpumon recording (it is not an SQLite file)",
    ),
    "only its first 50 bytes": (
        lambda data: data[:50],
        "is damaged (the file is cut short: 50 bytes, not even SQLite's 100-byte header)",
    ),
    "nothing": (lambda data: b"", "is not an nbgpumon recording (it is empty: 0 bytes)"),
    "a CSV instead": (
        lambda data: b"time,rss\n1,2\n",
        "is not an nbgpumon recording (it is not an SQLite file)",
    ),
}


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_file_is_one_recording_error_that_names_it(recording, tmp_path, damage):
    mutate, what = DAMAGED[damage]
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(mutate(recording.read_bytes()))
    with left_alone(path), pytest.raises(RecordingError) as failed:
        nbgpumon.load(path)
    message = str(failed.value)
    assert message.startswith(f"{path} {what}"), message
    assert "\n" not in message and not isinstance(failed.value, sqlite3.Error)


def test_a_missing_recording_is_a_recording_error_and_still_a_file_not_found_error(tmp_path):
    with pytest.raises(RecordingNotFound, match=f"^no recording at {re.escape(str(tmp_path))}/"):
        nbgpumon.load(tmp_path / "none.sqlite")
    assert issubclass(RecordingNotFound, FileNotFoundError)
    assert issubclass(RecordingNotFound, RecordingError)


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@pytest.mark.parametrize("extra", [0, 1234], ids=["at a page boundary", "mid-page"])
def test_a_file_cut_short_loads_as_far_as_it_goes_and_says_what_was_lost(
    recording, tmp_path, extra
):
    data = recording.read_bytes()
    cut = len(data) * 6 // 10 // PAGE * PAGE + extra
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[:cut])
    whole = load(recording)
    with left_alone(path), pytest.warns(RuntimeWarning) as warned:
        session = nbgpumon.load(path)
    n = len(session.times)
    assert 0 < n < len(whole.times)
    # what was read is the recording's beginning, value for value (nothing made up); a sample
    # whose gpu0 or host row was past the cut has that row's columns missing, nothing else
    np.testing.assert_array_equal(session.times, whole.times[:n])
    read = ~np.isnan(session.values)
    np.testing.assert_array_equal(session.values[read], whole.values[:n][read])
    assert read.any(axis=1).all()
    complete = read.sum(axis=1) == (~np.isnan(whole.values[:n])).sum(axis=1)
    assert complete[: n // 2].all()  # only the samples near the cut lost rows
    assert session.records == whole.records[: len(session.records)]
    assert session.damage.startswith(
        f"{path}: the file is cut short: {cut:,} of {len(data):,} bytes; "
        f"samples after {_utc(session.times[-1])}"
    ), session.damage
    assert session.damage.endswith(" could not be read")
    if len(session.records) < len(whole.records):
        assert f"the cells after the first {len(session.records)}" in session.damage
    assert [str(w.message) for w in warned] == [session.damage]


def test_the_magics_and_the_cli_say_in_one_line_what_a_file_cut_short_lost(recording, tmp_path):
    data = recording.read_bytes()
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[: len(data) // 2 // PAGE * PAGE])
    damage = damage_line(load(path).lost)  # (what nbgpumon.load warns of)
    runs = run_cells(["%load_ext nbgpumon", f"%gpumon advise {path}", f"%gpumon report {path}"])
    for run in runs[1:]:
        assert run.stdout.splitlines()[0] == f"nbgpumon: {damage}", run.text
        assert "Traceback" not in run.text and run.error is None
    cli = subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(path), "-o", str(tmp_path / "r.html")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cli.returncode == 0 and cli.stderr == f"nbgpumon: {damage}\n", cli.stderr
    assert (tmp_path / "r.html").stat().st_size > 0


def test_missing_folders_are_made_and_said_and_a_path_that_fails_leaves_none(tmp_path):
    path = tmp_path / "runs" / "today" / "run.sqlite"
    too_long = tmp_path / "made" / ("x" * 300 + ".sqlite")  # its folder can be made; it can't
    mon = Monitor()
    try:
        line = mon.record(path)
        assert line == f"recording to {path} (session 1); created the folder {path.parent}"
        with pytest.raises(RecordingError, match=f"^cannot record to {re.escape(str(too_long))}: "):
            mon.record(too_long)
        assert mon.recording == f"recording to {path}"  # the running one goes on
    finally:
        mon.close()
    assert not (tmp_path / "made").exists()


# -- long sessions: samples older than the raw window are folded into 1 min buckets ---------

FOLDED_COLUMNS = ["gpu0.nvml.mem_used", "gpu0.nvml.gpu_util", "host.rss"]
T0 = 1_700_000_003.0  # mid-bucket: the first bucket holds fewer samples than the others
INFO = {"host": "test", "pid": 1, "gpus": [{"index": 0, "name": "Fake H200"}], "driver": "",
        "versions": {}}  # fmt: skip
SPIKE = 100 * 2**30  # one sample's mem_used, in a part that is folded
FULL = round(WIDTH / 0.1)  # samples in a whole bucket, 0.1 s apart


def _sample(i: int) -> list[float | None]:
    """Sample ``i``: mem_used climbs (one spike), utilization saw-tooths with gaps."""
    used = SPIKE if i == 123 else float(i) * 2**20
    return [used, None if i % 7 == 0 else float(i % 100), 5e9 + i]


def _cell(i: int) -> CellRecord:
    return CellRecord(i, "cell", i + 1, None, f"step({i})", T0 + i, 0.5, "ok", "", (), 1, 2, 3,
                      False)  # fmt: skip


def _started_at_t0(path: Path, timeline: Timeline, **options: float) -> RecordingWriter:
    """A writer whose session started at T0, when its samples and cells do: a recording's
    cells are those that ended after it started."""
    with unittest.mock.patch("nbgpumon._recording.writer.wall_clock", return_value=T0):
        return RecordingWriter(path, timeline, INFO, **options)


def _write_folded(
    path: Path, samples: int, raw_seconds: float = 30.0, every: int = 5, cells_every: int = 50
) -> RecordingWriter:
    """``samples`` samples 0.1 s apart from T0, through the real writer, ``every`` samples a
    transaction (5: the writer thread's half second), with a cell and a mark now and then."""
    timeline = Timeline(FOLDED_COLUMNS)
    writer = _started_at_t0(path, timeline, raw_seconds=raw_seconds)
    db = open_database(path)
    try:
        for i in range(samples):
            timeline.append(T0 + i * 0.1, _sample(i))
            if i % cells_every == 0:
                writer.add_cell(_cell(i // cells_every))
                writer.add_mark(T0 + i * 0.1, f"mark {i}")
            if i % every == every - 1:
                writer.write_pending(db)
        writer.write_pending(db)
    finally:
        db.close()
    return writer


def _fed(samples: int) -> tuple[np.ndarray, np.ndarray]:
    """The times and values written, as the timeline keeps them (float32)."""
    values = np.array([_sample(i) for i in range(samples)], dtype=np.float64)
    return T0 + np.arange(samples) * 0.1, values.astype(np.float32).astype(np.float64)


def test_samples_older_than_the_raw_window_become_buckets_with_their_min_mean_max(tmp_path):
    path, n = tmp_path / "long.sqlite", 5 * FULL  # five buckets' worth, 30 s kept raw
    writer = _write_folded(path, n)
    times, fed = _fed(n)
    cutoff = np.floor((times[-1] - 30.0) / WIDTH) * WIDTH  # the last fold's bucket boundary
    with contextlib.closing(sqlite3.connect(path)) as db:
        raw = [t for (t,) in db.execute("SELECT time FROM samples WHERE device = 'host'")]
        buckets = db.execute(
            "SELECT time, seconds, samples, nvml_mem_used, nvml_mem_used_min, nvml_mem_used_max,"
            " nvml_gpu_util, nvml_gpu_util_min, nvml_gpu_util_max FROM sample_buckets"
            " WHERE device = 'gpu0' ORDER BY time"
        ).fetchall()
        host = db.execute("SELECT host_rss_min, host_rss_max FROM sample_buckets "
                          "WHERE device = 'host' ORDER BY time").fetchall()  # fmt: skip
    # the newest rows stay raw, exactly those from the last bucket boundary on
    np.testing.assert_array_equal(sorted(raw), times[times >= cutoff])
    starts = np.arange(np.floor(T0 / WIDTH), cutoff / WIDTH) * WIDTH
    assert [b[0] for b in buckets] == starts.tolist() and len(host) == len(starts)
    for (start, seconds, count, *figures), (low, high) in zip(buckets, host, strict=True):
        inside = (times >= start) & (times < start + WIDTH)
        used, util, rss = fed[inside].T
        assert seconds == WIDTH and count == inside.sum()
        assert figures[:3] == [pytest.approx(used.mean(), rel=1e-12), used.min(), used.max()]
        assert figures[3:] == [pytest.approx(np.nanmean(util)), np.nanmin(util), np.nanmax(util)]
        assert (low, high) == (rss.min(), rss.max())
    assert buckets[0][2] < FULL and buckets[1][2] == FULL  # the first began mid-bucket
    assert writer.compactor.rows_folded == 2 * (n - len(raw))  # a gpu0 and a host row each
    # load: the buckets, then the raw samples; every sample counted once
    session = nbgpumon.load(path)
    assert session.buckets == len(starts) and session.damage == ""
    np.testing.assert_array_equal(session.times, np.concatenate([starts, sorted(raw)]))
    assert session.sample_counts.sum() == n
    at = session.columns.index("gpu0.nvml.mem_used")
    assert session.high[: len(starts), at].tolist() == [b[5] for b in buckets]
    np.testing.assert_array_equal(session.values[len(starts) :], fed[times >= cutoff])
    np.testing.assert_array_equal(session.low[len(starts) :], fed[times >= cutoff])
    # cells and marks are never folded
    assert [r.label for r in session.records] == [f"step({i})" for i in range(n // 50)]
    assert [m for _, m in session.marks] == [f"mark {i}" for i in range(0, n, 50)]


def test_the_report_the_chart_and_the_frames_see_a_folded_spike_at_its_height(tmp_path):
    from nbgpumon._views.report.bqplot_report import _session_data

    path = tmp_path / "spike.sqlite"
    _write_folded(path, 3 * FULL)
    session = nbgpumon.load(path)
    at = session.columns.index("gpu0.nvml.mem_used")
    bucket = int(np.searchsorted(session.times, T0 + 12.3, side="right")) - 1
    assert bucket < session.buckets and session.values[bucket, at] < SPIKE / 10  # the mean
    assert session.window().high[:, at].max() == SPIKE  # what the chart's history packs
    report = _session_data(session, max_points=20)
    assert report.series("gpu0.nvml.mem_used", peak=True).max() == SPIKE
    frame = session.samples_frame(ranges=True)
    assert frame["gpu0.nvml.mem_used.max"].max() == SPIKE
    assert frame["gpu0.nvml.mem_used"].max() < SPIKE  # the means: the live frame's shape
    assert frame["samples"].sum() == 3 * FULL and (frame["samples"][session.buckets :] == 1).all()
    assert status_line(session.status()) == (
        f"recorded: {path} (session 1), {len(session.times) - session.buckets:,} samples, "
        f"and {session.buckets} buckets of the older ones"
    )
    assert session.status().interval == pytest.approx(0.1)


def test_raw_seconds_0_keeps_every_sample_and_the_setting_reaches_the_writer(tmp_path):
    path = tmp_path / "all.sqlite"
    _write_folded(path, 3 * FULL, raw_seconds=0)
    session = nbgpumon.load(path)
    assert session.buckets == 0 and len(session.times) == 3 * FULL
    mon = Monitor(GPUMon(record_raw_seconds=120))
    try:
        mon.record(tmp_path / "set.sqlite")
        assert mon._session.recording_control.writer.compactor.raw_seconds == 120
    finally:
        mon.close()
    with pytest.raises(TraitError, match=r"^GPUMon.record_raw_seconds is a number of seconds"):
        GPUMon(record_raw_seconds=-1)


KILLED_IN_A_FOLD = """
import os, sys
sys.path.insert(0, {tests!r})
from test_recording_files import T0, FULL, _sample, Timeline, RecordingWriter, INFO, open_database
timeline = Timeline({columns!r})
writer = RecordingWriter({path!r}, timeline, INFO, raw_seconds=30.0)
db = open_database(writer.path)
db.execute("PRAGMA cache_size = 1")  # the fold's pages spill into the log before its commit
for i in range(3 * FULL):
    timeline.append(T0 + i * 0.1, _sample(i))
writer.write_pending(db)  # committed: three buckets' worth, the first two folded
for i in range(3 * FULL, 4 * FULL):
    timeline.append(T0 + i * 0.1, _sample(i))
db.create_function("crash", 0, lambda: os.kill(os.getpid(), 9))
writer.compactor._delete = "SELECT crash()"  # killed after the fold's insert, before its delete
writer.write_pending(db)
"""


def test_a_writer_killed_in_the_middle_of_a_fold_leaves_its_last_commit_whole(tmp_path):
    path = tmp_path / "killed.sqlite"
    script = KILLED_IN_A_FOLD.format(
        tests=str(Path(__file__).parent), columns=FOLDED_COLUMNS, path=str(path)
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert killed.returncode == -9, killed.stderr.decode()
    assert path.with_name(path.name + "-wal").stat().st_size > 0  # left as a kill leaves it
    session = nbgpumon.load(path)
    times, fed = _fed(3 * FULL)
    cutoff = np.floor((times[-1] - 30.0) / WIDTH) * WIDTH
    assert session.buckets == 2
    assert session.sample_counts.sum() == 3 * FULL  # every committed sample, once; none after
    np.testing.assert_array_equal(session.times[session.buckets :], times[times >= cutoff])
    assert session.times[session.buckets - 1] == cutoff - WIDTH
    np.testing.assert_array_equal(session.values[session.buckets :], fed[times >= cutoff])


def test_a_folded_recording_cut_short_loads_what_it_holds_and_nothing_twice(tmp_path):
    whole_path = tmp_path / "long.sqlite"
    n = 18_000  # 30 min, 2 min raw: the pages the folds free were reused all along
    _write_folded(whole_path, n, raw_seconds=120.0, every=50, cells_every=50)
    whole = load(whole_path)
    data = whole_path.read_bytes()
    for share, extra in ((4, 0), (7, 1234), (9, 0)):
        path = tmp_path / f"cut-{share}.sqlite"
        cut = len(data) * share // 10 // PAGE * PAGE + extra
        path.write_bytes(data[:cut])
        with pytest.warns(RuntimeWarning):
            session = nbgpumon.load(path)
        assert session.damage.startswith(f"{path}: the file is cut short: {cut:,} of ")
        # what was read is in the whole, value for value: bucket rows and raw rows alike
        assert (np.diff(session.times) > 0).all()  # nothing twice
        at = np.searchsorted(whole.times, session.times)
        np.testing.assert_array_equal(whole.times[at], session.times)
        for mine, theirs in ((session.values, whole.values), (session.high, whole.high)):
            read = ~np.isnan(mine)
            np.testing.assert_array_equal(mine[read], theirs[at][read])
        assert session.sample_counts.sum() <= n
        assert whole.records and session.records == whole.records[: len(session.records)]


def test_a_schema_2_recording_loads_without_buckets_and_gets_a_session_that_has_them(tmp_path):
    path = tmp_path / "frameworks.sqlite"
    shutil.copy(Path(__file__).parent / "data" / "recorded-frameworks-h200.sqlite", path)
    with left_alone(path):
        before = nbgpumon.load(path)
    assert before.buckets == 0 and len(before.times) > 0 and (before.sample_counts == 1).all()
    timeline = Timeline(FOLDED_COLUMNS)
    writer = RecordingWriter(path, timeline, INFO, raw_seconds=30.0)
    db = open_database(path)
    try:
        for i in range(3 * FULL):
            timeline.append(T0 + i * 0.1, _sample(i))
        writer.write_pending(db)
    finally:
        db.close()
    assert writer.session_id == 2
    new, old = nbgpumon.load(path), nbgpumon.load(path, session=1)
    assert new.buckets > 0 and new.sample_counts.sum() == 3 * FULL
    np.testing.assert_array_equal(old.times, before.times)
    np.testing.assert_array_equal(old.values, before.values)


# -- schema 4: each cell's source --------------------------------------------------------
# Made with schema 3 (nbgpumon before issue 14), %gpumon record in a real kernel with one GPU
# faked at NVML's boundary: two cells that begin alike ("import numpy as np"), a region.
MADE_AT_SCHEMA_3 = Path(__file__).parent / "data" / "recorded-v3.sqlite"


def test_a_schema_3_recording_loads_without_sources_and_gets_a_session_that_has_them(tmp_path):
    path = tmp_path / "v3.sqlite"
    shutil.copy(MADE_AT_SCHEMA_3, path)
    with left_alone(path):
        old = nbgpumon.load(path)
    assert old.damage == "" and len(old.times) > 0
    # its two cells that begin alike can't be told apart: the reason for schema 4
    assert [r.label for r in old.records].count("import numpy as np") == 2
    assert [r.label for r in old.records if r.kind == "region"] == ["epoch 1"]
    assert {(r.source, r.source_hash, r.source_cut) for r in old.records} == {("", None, False)}
    frame = old.cells_frame()
    assert frame["source_hash"].isna().all() and (frame["source"] == "").all()
    # recording into it: the cells table gains the source, the new session's cells have theirs
    source = "import numpy as np\nz = np.ones(3)"
    cell = dataclasses.replace(
        _cell(0), source=source, source_hash=hashlib.sha256(source.encode()).hexdigest()[:16]
    )
    writer = _started_at_t0(path, Timeline(FOLDED_COLUMNS))
    writer.add_cell(cell)
    db = open_database(path)
    try:
        writer.write_pending(db)
    finally:
        db.close()
    (loaded,) = nbgpumon.load(path, session=writer.session_id).records
    assert loaded == cell
    again = nbgpumon.load(path, session=old.session_id)
    assert again.records == old.records
    with contextlib.closing(sqlite3.connect(path)) as db:
        schemas = [s for (s,) in db.execute("SELECT schema FROM session ORDER BY id")]
    assert schemas == [3, SCHEMA_VERSION] and SCHEMA_VERSION >= 4
