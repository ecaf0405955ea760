"""Crash-safe recording: a real kernel killed with SIGKILL leaves a readable file with its
samples up to about a second before the kill and every finished cell; a recording loads back
into the same frames as the live session; failures are a status, not a crash."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import nbgpumon
from nbgpumon._recording.reader import sessions

from notebook_runner import run_cells
from waiting import until

FINISHED = [
    "a = list(range(10))",
    "b = bytearray(2**20)",
    "nbgpumon.mark('before the long cell')",
]


def test_a_kernel_killed_mid_cell_leaves_its_samples_and_finished_cells(kernel, tmp_path):
    path = tmp_path / "run.sqlite"
    kernel.run("%load_ext nbgpumon")
    kernel.run(f"%gpumon record {path}\nimport os, nbgpumon\nPID = os.getpid()")
    pid = int(_stdout(kernel.run("print(PID)")).strip())
    for code in FINISHED:
        kernel.run(code)
    kernel.client.execute("import time\ntime.sleep(60)")  # don't wait: kill it mid-cell
    long_cell = time.time()
    # kill once the file holds samples from inside the long cell (a deadline, no fixed sleep)
    committed = until(lambda: _newest_sample(path) > long_cell + 2.5, "samples", 60)
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    until(lambda: not kernel.manager.is_alive(), "the kernel to die", 30)

    session = nbgpumon.load(path)
    assert len(session.times) > 20
    # what was committed before the kill is all there; the writer commits every 0.5 s, so
    # little more is lost (the bound is loose: a loaded machine delays the writer's thread)
    assert session.times[-1] >= committed
    assert killed_at - session.times[-1] <= 3.0, killed_at - session.times[-1]
    labels = [r.label for r in session.records]
    for code in FINISHED:
        assert code in labels
    assert "import time" not in labels  # the cell that was killed never finished
    assert session.marks and session.marks[0][1] == "before the long cell"
    # any SQLite client reads it
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM samples WHERE device = 'host'").fetchone()
    assert count == len(session.times)


def _newest_sample(path) -> float:
    """The newest sample time committed to the recording at ``path`` (0 before any)."""
    if not path.exists():
        return 0.0
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        (newest,) = db.execute("SELECT MAX(time) FROM samples").fetchone()
    return float(newest or 0.0)


def _stdout(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")


COMPARE = (
    "import pandas as pd, nbgpumon\n"
    "from nbgpumon._views.frames import cells_frame\n"
    "live_cells = cells_frame(nbgpumon.cells()[:-1])  # the last: `record off`, ended after it\n"
    "s = nbgpumon.load(PATH)\n"
    "pd.testing.assert_frame_equal(live_cells, s.cells_frame())\n"
    "live = nbgpumon.monitor().samples_frame(s.times[0], s.times[-1])\n"
    "pd.testing.assert_frame_equal(live, s.samples_frame())\n"
    "print('EQUAL', len(s.times), len(s.records), [m for _, m in s.marks])"
)

# A cell that waits, with a deadline, until the sampler has taken 10 more rows than at its
# start (not a fixed sleep, which a loaded machine's slower sampler may not fill); "ROWS True".
ROWS_RECORDED = (
    "import time as _t, nbgpumon as _n\n_m = _n.monitor()\n"
    "_c, _d = _m.data.cursor + 10, _t.monotonic() + 30\n"
    "while _m.data.cursor < _c and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "print('ROWS', _m.data.cursor >= _c)"
)


def test_record_load_round_trip_gives_the_live_frames(tmp_path):
    path = tmp_path / "round.sqlite"
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            f"PATH = {str(path)!r}\n%gpumon record {path}",
            "import numpy as np\nkeep = np.ones(2**24)",
            "import nbgpumon\nnbgpumon.mark('epoch 1')\nwith nbgpumon.track('region'):\n"
            "    more = np.ones(2**20)",
            "raise ValueError('recorded as an error')",
            ROWS_RECORDED,  # at least 10 samples while recording
            "%gpumon record",
            "%gpumon record off",
            COMPARE,
        ]
    )
    assert runs[1].stdout.startswith(f"nbgpumon: recording to {path} (session 1)")
    assert runs[6].stdout.strip() == f"nbgpumon: recording to {path}"
    assert runs[7].stdout.startswith("nbgpumon: recording stopped; ")
    assert runs[5].stdout.split() == ["ROWS", "True"]
    assert runs[8].error is None, runs[8].text
    equal = runs[8].stdout.split()
    assert equal[0] == "EQUAL" and int(equal[1]) >= 10 and int(equal[2]) == 7
    session = nbgpumon.load(path)
    statuses = {r.label: r.status for r in session.records}
    assert statuses["raise ValueError('recorded as an error')"] == "error"
    assert [r.label for r in session.records if r.kind == "region"] == ["region"]
    (keep,) = [r for r in session.records if r.label == "import numpy as np"]
    assert keep.retention is not None and keep.retention.holders[0][0] == "keep"


def test_export_writes_csv_and_a_second_session_appends(tmp_path):
    path = tmp_path / "two.sqlite"
    for _ in range(2):
        run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", "x = 1", "%gpumon record off"])
    assert sessions(path) == [1, 2]
    written = nbgpumon.load(path, session=1).export(tmp_path / "out")
    assert sorted(p.name for p in written) == ["cells.csv", "samples.csv"]
    header = (tmp_path / "out" / "samples.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "time" and "host.rss" in header


def test_times_keep_their_fractions_of_a_second():
    from nbgpumon._views.frames import samples_frame

    frame = samples_frame(np.array([1.7e9 + 0.25, 1.7e9 + 0.35]), np.zeros((2, 1)), ["host.rss"])
    assert str(frame["time"].dtype) == "datetime64[ns, UTC]"
    # 1.7e9 + 0.35 is a float ~100 ns off: what matters is that the tenth is there
    assert frame["time"].diff().iloc[1].total_seconds() == pytest.approx(0.1, abs=1e-5)
    assert frame["time"].iloc[0].microsecond == 250_000


def test_parquet_export_reads_back_as_the_same_frames(tmp_path):
    import pandas as pd

    pytest.importorskip("pyarrow")  # in the test extra; Parquet is optional for users
    path = tmp_path / "p.sqlite"
    run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", "y = 2", "%gpumon record off"])
    session = nbgpumon.load(path)
    session.export(tmp_path / "pq", "parquet")
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "pq" / "samples.parquet"), session.samples_frame()
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "pq" / "cells.parquet"), session.cells_frame()
    )
    with pytest.raises(ValueError, match="format is csv or parquet"):
        session.export(tmp_path / "x", "xlsx")


def test_a_failing_write_stops_the_recording_with_a_status_and_keeps_what_was_written(tmp_path):
    mon = nbgpumon.Monitor()
    try:
        mon.start()
        print(mon.record(tmp_path / "fail.sqlite"))
        recorder = mon._session.recording_control.writer
        until(lambda: recorder.rows_written >= 5, "rows written", 60)

        def full(db):  # the disk fills up: sqlite3's own error for it
            raise sqlite3.OperationalError("database or disk is full")

        recorder.write_pending = full
        until(lambda: not recorder.running, "the recorder to stop", 60)
        path = tmp_path / "fail.sqlite"
        assert mon.recording.startswith(f"recording stopped: the disk holding {path} is full; ")
        assert "of samples before it are in the file" in mon.recording
        assert mon._session.sampler.running  # the sampler never noticed
    finally:
        mon.close()
    assert len(nbgpumon.load(tmp_path / "fail.sqlite").times) >= 5


def test_report_command_writes_one_self_contained_page_and_fails_in_one_line(tmp_path):
    path = tmp_path / "r.sqlite"
    run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", "x = '<b>bold</b>'  # <script>"])
    out = tmp_path / "report.html"
    ok = subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(path), "-o", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    page = out.read_text()
    assert "<svg" in page and "http" not in page.replace("http://www.w3.org", "")
    assert "&lt;script&gt;" in page and "<script" not in page
    bad = subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(tmp_path / "none.sqlite")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0
    assert "no recording at" in bad.stderr


def test_the_schema_is_what_docs_recording_md_documents(tmp_path):
    path = tmp_path / "s.sqlite"
    run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", "%gpumon record off"])
    with sqlite3.connect(path) as db:
        tables = {
            name: [c[1] for c in db.execute(f"PRAGMA table_info({name})")]
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        versions = json.loads(db.execute("SELECT versions FROM session").fetchone()[0])
        meta = dict(db.execute("SELECT key, value FROM meta"))
        (application_id,) = db.execute("PRAGMA application_id").fetchone()
    doc = (Path(__file__).parent.parent / "docs" / "recording.md").read_text()
    assert f"`{application_id}`" in doc
    for key, value in meta.items():
        assert f"`{key}`" in doc and f"`{value}`" in doc, (key, value)
    for table, columns in tables.items():
        assert f"`{table}`" in doc
        for column in columns:
            assert f"`{column}`" in doc, (table, column)
    assert versions["nbgpumon"] == nbgpumon.__version__


STILL_RECORDING = (
    "import time, nbgpumon\n"
    "from nbgpumon import load\n"
    "n0, deadline = len(load(PATH).times), time.time() + 30\n"
    "while len(load(PATH).times) < n0 + 5 and time.time() < deadline:\n"
    "    time.sleep(0.1)\n"
    "m = nbgpumon.monitor()\n"
    "print('STILL', len(load(PATH).times) - n0, repr(m.config.record_path), m.recording)"
)


def test_a_bad_target_leaves_the_running_recording_and_its_setting_alone(tmp_path):
    good, csv = tmp_path / "good.sqlite", tmp_path / "data.csv"
    csv.write_text("time,rss\n1,2\n")
    bad = [str(tmp_path), "/proc/forbidden/run.db", str(csv)]
    tries = [
        *(f"%gpumon record {target}" for target in bad),
        "%gpumon record ''",
        '%gpumon record "  "',
        *(f"%config GPUMon.record_path = {target!r}" for target in [*bad, "  "]),
    ]
    start = f"PATH = {str(good)!r}\n%config GPUMon.record_path = PATH"
    runs = run_cells(["%load_ext nbgpumon", start, *tries, STILL_RECORDING])
    assert runs[1].stdout.strip() == f"nbgpumon: recording to {good} (session 1)"
    for code, run in zip(tries, runs[2:-1], strict=True):
        text = run.text.strip()
        assert len(text.splitlines()) == 1 and "Traceback" not in text, (code, text)
        assert "cannot record to " in text, (code, text)
    still = runs[-1].stdout.strip().split(maxsplit=3)
    assert still[0] == "STILL" and int(still[1]) >= 5, runs[-1].text
    assert still[2:] == [repr(str(good)), f"recording to {good}"]
    assert csv.read_text() == "time,rss\n1,2\n"


def test_record_path_says_where_it_records_and_a_config_file_starts_it(tmp_path):
    ipython_dir = tmp_path / "ipython"
    (ipython_dir / "profile_default").mkdir(parents=True)
    first, second = tmp_path / "from-config.sqlite", tmp_path / "by-magic.sqlite"
    (ipython_dir / "profile_default" / "ipython_kernel_config.py").write_text(
        f"c.GPUMon.record_path = {str(first)!r}\n"
    )
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "print('PATH', repr(get_ipython().config.GPUMon.record_path))",
            f"%gpumon record {second}",
            "import nbgpumon\nprint('NOW', repr(nbgpumon.monitor().config.record_path))",
            "%gpumon record off",
            "print('OFF', repr(nbgpumon.monitor().config.record_path))",
        ],
        env={"IPYTHONDIR": str(ipython_dir)},
    )
    assert f"nbgpumon: recording to {first} (session 1)" in runs[0].text, runs[0].text
    assert runs[3].stdout.split() == ["NOW", repr(str(second))], runs[3].text
    assert runs[5].stdout.split() == ["OFF", "''"], runs[5].text
    assert len(nbgpumon.load(first).records) >= 1


SOURCES = [
    "import numpy as np\nx = np.ones(8)",
    "import numpy as np\ny = np.zeros(8)",  # the same first line: only the source tells them apart
    "s = '" + "€" * 30_000 + "'",  # over 64 KiB: kept cut
    "import nbgpumon\nwith nbgpumon.track('epoch 1'):\n    pass",
]


def test_each_cell_s_source_and_hash_are_recorded_loaded_and_exported(tmp_path):
    import pandas as pd

    path = tmp_path / "sources.sqlite"
    run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", *SOURCES, "%gpumon record off"])
    session = nbgpumon.load(path)
    cells = {r.execution_count: r for r in session.records if r.kind == "cell"}
    recorded = [cells[n] for n in range(3, 3 + len(SOURCES))]
    hashes = [hashlib.sha256(s.encode()).hexdigest()[:16] for s in SOURCES]
    assert [r.source_hash for r in recorded] == hashes and len(set(hashes)) == 4
    assert [r.source_cut for r in recorded] == [False, False, True, False]
    assert [r.source for r in recorded] == [
        *SOURCES[:2], SOURCES[2].encode()[: 64 * 1024].decode("utf-8", "ignore"), SOURCES[3]
    ]  # fmt: skip
    (region,) = [r for r in session.records if r.kind == "region"]
    assert (region.source, region.source_hash, region.source_cut) == ("", None, False)
    # any SQLite client sees them in the cells table; the JSON record doesn't repeat the text
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT source_hash, source_cut, source, record FROM cells ORDER BY idx"
        ).fetchall()
    by_hash = {h: (cut, source, json.loads(record)) for h, cut, source, record in rows}
    assert [by_hash[h][:2] for h in hashes] == [(r.source_cut, r.source) for r in recorded]
    assert all("source" not in record for _, _, record in by_hash.values())
    assert (None, 0, "") in [(h, cut, source) for h, cut, source, _ in rows]  # the region
    # and an export has them, the text whole
    session.export(tmp_path / "csv")
    exported = pd.read_csv(tmp_path / "csv" / "cells.csv", keep_default_na=False)
    assert list(exported.columns[-2:]) == ["source_cut", "source"]
    assert exported.set_index("source_hash").loc[hashes, "source"].tolist() == [
        r.source for r in recorded
    ]


def test_report_and_export_write_new_files_and_never_over_one_that_is_there(tmp_path):
    path = tmp_path / "n.sqlite"
    run_cells(["%load_ext nbgpumon", f"%gpumon record {path}", "y = 2", "%gpumon record off"])
    mine = tmp_path / "mine.html"
    mine.write_text("the user's own page")
    refused = subprocess.run(
        [sys.executable, "-m", "nbgpumon", "report", str(path), "-o", str(mine)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and "exists: nbgpumon writes new files only" in refused.stderr
    assert refused.stderr.strip().count("\n") == 0
    assert mine.read_text() == "the user's own page"
    out = tmp_path / "out"
    out.mkdir()
    (out / "cells.csv").write_text("the user's own cells")
    with pytest.raises(nbgpumon.UsageError, match=r"cells\.csv exists: export writes new files"):
        nbgpumon.load(path).export(out)
    assert (out / "cells.csv").read_text() == "the user's own cells"
    assert not (out / "samples.csv").exists()  # all or nothing
