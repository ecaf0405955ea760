"""The processes a cell started, in the recording (schema 5): a real child of a real session,
its GPU memory listed by NVML faked at its boundary, is a row of the ``children`` table and
comes back in its cell's record from ``nbgpumon.load``; a child that outlives its cell brings
its row up to date (never a second cell row); older recordings load with no children."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon._ledger.records import CellRecord
from nbgpumon._recording.schema import SCHEMA_VERSION
from nbgpumon._recording.writer import RecordingWriter, open_database
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._session.config import GPUMon
from nbgpumon._session.session import Session
from nbgpumon._sources.processes.children import ChildGpu, ChildUsage

from child_python import python
from notebook_runner import fake_pynvml
from waiting import until

GIB = 2**30
DATA = Path(__file__).parent / "data"

# A training script stand-in: it says what it holds on the GPU (a file the fake NVML reads, in
# the folder given), then holds it until told to go on by a file named after it, again and
# again: GIB="3 4.5" holds 3 GiB, then 4.5 GiB, then exits with code 7. (The sizes are in its
# environment, so that runs holding different amounts have the same command.)
CHILD = """\
import json, os, sys, time
where, sizes = sys.argv[1], [float(s) for s in os.environ["GIB"].split()]
mine = os.path.join(where, str(os.getpid()))
for step, gib in enumerate(sizes):
    with open(mine + ".tmp", "w") as f:
        json.dump({"used": int(gib * 2**30), "sm": 50}, f)
    os.replace(mine + ".tmp", mine)
    go, deadline = os.path.join(where, f"go-{os.getpid()}-{step}"), time.time() + 60
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.01)
os.remove(mine)
sys.exit(7)
"""


@contextlib.contextmanager
def recording_session(tmp_path: Path, name: str = "run.sqlite") -> Iterator[tuple[Session, Path]]:
    """A bare Session (no IPython) on one fake GPU that lists this process's real descendants
    with what their files in ``tmp_path / "gpu"`` say, recording to ``tmp_path / name``."""
    used = tmp_path / "gpu"
    used.mkdir(exist_ok=True)
    gpu = fake_pynvml(
        devices=[{"name": "Fake GPU", "used": GIB, "total": 16 * GIB}],
        processes=[{"pid": "descendants", "used_from": str(used)}],
    )
    session = Session(GPUMon(interval=0.05, process_interval=0.05), nvml_module=gpu)
    path = tmp_path / name
    try:
        session.start()
        assert session.record(path).started
        yield session, used
    finally:
        session.close()


def start_child(
    tmp_path: Path, used: Path, *gib: float, script: str = "train.py"
) -> subprocess.Popen:
    """The child script as ``script``, holding ``gib`` GiB in turn (see CHILD)."""
    (tmp_path / script).write_text(CHILD)
    # run where it lies, so that its command is short: "python train.py gpu"
    env = {**os.environ, "GIB": " ".join(map(str, gib))}
    return subprocess.Popen([python(), script, used.name], cwd=tmp_path, env=env)


def go_on(used: Path, child: subprocess.Popen, step: int) -> None:
    (used / f"go-{child.pid}-{step}").touch()


def seen_holding(session: Session, pid: int, peak: int) -> ChildUsage | None:
    """The child ``pid`` as the session's process source has it, once its peak is ``peak``."""
    for child in session.process_source.children():
        if child.pid == pid and child.peak == peak:
            return child
    return None


def _loaded_cell(path: Path, count: int) -> CellRecord | None:
    with contextlib.suppress(nbgpumon.RecordingError):
        for record in nbgpumon.load(path).records:
            if record.execution_count == count:
                return record
    return None


def test_a_child_of_a_cell_is_recorded_and_loads_with_its_cell(tmp_path):
    with recording_session(tmp_path) as (session, used):
        opened = session.cells_pipeline.begin(5, "!python train.py")
        child = start_child(tmp_path, used, 3)
        until(lambda: seen_holding(session, child.pid, 3 * GIB), "the child holding 3 GiB")
        go_on(used, child, 0)
        assert child.wait(timeout=30) == 7
        session.cells_pipeline.end(opened, "ok", "", 5, None)
        path = tmp_path / "run.sqlite"
        record = until(lambda: _loaded_cell(path, 5), "the cell in the file")
    (kid,) = record.children
    assert kid.pid == child.pid and kid.command == "python train.py gpu"
    assert kid.peak == 3 * GIB and kid.exact is False
    (on_gpu,) = kid.gpus
    assert on_gpu.index == 0 and on_gpu.interval == pytest.approx(0.05)
    assert "children" not in _cell_json(path, 5)  # in its own table, not twice
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT pid, command, peak, exact, rank, job FROM children").fetchall()
    assert row == [(child.pid, kid.command, 3 * GIB, 0, None, "")]


def test_a_child_that_outlives_its_cell_updates_its_row_and_never_adds_a_cell(tmp_path):
    path = tmp_path / "run.sqlite"
    with recording_session(tmp_path) as (session, used):
        opened = session.cells_pipeline.begin(6, "p = subprocess.Popen(['python', 'train.py'])")
        child = start_child(tmp_path, used, 3, 4.5)
        until(lambda: seen_holding(session, child.pid, 3 * GIB), "the child holding 3 GiB")
        session.cells_pipeline.end(opened, "ok", "", 6, None)  # the child runs on
        first = until(lambda: _loaded_cell(path, 6), "the cell in the file")
        assert [(c.peak, c.ended) for c in first.children] == [(3 * GIB, None)]
        go_on(used, child, 0)  # it grows to 4.5 GiB after its cell ended
        until(lambda: seen_holding(session, child.pid, int(4.5 * GIB)), "4.5 GiB seen")
        go_on(used, child, 1)
        # its exit code is read from the zombie: seen before this process reaps it
        until(
            lambda: [c for c in session.process_source.children() if c.exit_code is not None],
            "its exit seen",
        )
        assert child.wait(timeout=30) == 7

        def ended() -> CellRecord | None:
            session.cells()  # settles: the child's newest figures in its cell's record
            record = _loaded_cell(path, 6)
            done = record is not None and record.children and record.children[0].ended
            return record if done else None

        record = until(ended, "the child's end in the file")
    (kid,) = record.children
    assert kid.peak == int(4.5 * GIB) and kid.exit_code == 7
    assert kid.ended is not None and kid.started <= kid.ended <= time.time()
    with contextlib.closing(sqlite3.connect(path)) as db:
        cells = db.execute("SELECT COUNT(*) FROM cells WHERE execution_count = 6").fetchone()
        rows = db.execute("SELECT peak, exit_code, ended FROM children").fetchall()
    assert cells == (1,)
    assert rows == [(int(4.5 * GIB), 7, kid.ended)]
    assert [r.execution_count for r in nbgpumon.load(path).records].count(6) == 1


# -- the writer, on records made here ------------------------------------------------------
COLUMNS = ["gpu0.nvml.mem_used", "host.rss"]
INFO = {"host": "test", "pid": 1, "gpus": [{"index": 0, "name": "Fake GPU"}], "driver": "",
        "versions": {}}  # fmt: skip


def _cell(index: int, children: tuple[ChildUsage, ...] = ()) -> CellRecord:
    # ended now: a cell of the recording (one that ended before it started is the kernel's
    # earlier ledger, which the file keeps apart)
    return CellRecord(index, "cell", index + 1, None, f"step({index})", time.time() + index, 0.5,
                      "ok", "", (), 1, 2, 3, False, children=children)  # fmt: skip


def _child(pid: int, gib: float, ended: float | None = None) -> ChildUsage:
    gpu = ChildGpu(0, int(gib * GIB), False, 0.25, 40.0, 3)
    return ChildUsage(pid, f"python train.py --pid {pid}", 1e9 + pid / 1000, ended,
                      None if ended is None else 0, 1, 1, (gpu,), rank=0, job="j")  # fmt: skip


def _write(writer: RecordingWriter, path: Path) -> None:
    db = open_database(path)
    try:
        writer.write_pending(db)
    finally:
        db.close()


def test_an_update_queued_with_its_cell_and_one_after_a_failed_batch_are_both_written(tmp_path):
    path = tmp_path / "w.sqlite"
    writer = RecordingWriter(path, Timeline(COLUMNS), INFO)
    early = _cell(0, (_child(11, 1.0), _child(12, 2.0)))
    writer.add_cell(early)
    writer.update_cell(dataclasses.replace(early, children=(_child(11, 1.5), _child(12, 2.0))))
    _write(writer, path)
    assert nbgpumon.load(path).records[0].children == (_child(11, 1.5), _child(12, 2.0))
    # a batch that fails keeps its updates for the next one
    writer.update_cell(dataclasses.replace(early, children=(_child(11, 3.0, ended=1e9 + 9),)))
    broken = sqlite3.connect(path, isolation_level=None)
    broken.execute("PRAGMA query_only = ON")
    with pytest.raises(sqlite3.OperationalError):
        writer.write_pending(broken)
    broken.close()
    _write(writer, path)
    (record,) = nbgpumon.load(path).records
    assert record.children == (_child(11, 3.0, ended=1e9 + 9), _child(12, 2.0))
    assert writer.cells_written == 1


def test_sessions_before_schema_5_load_with_no_children_and_the_file_gets_the_table(tmp_path):
    path = tmp_path / "v3.sqlite"
    shutil.copy(DATA / "recorded-v3.sqlite", path)
    for old in (DATA / "recorded-v3.sqlite", DATA / "recorded-frameworks-h200.sqlite",
                DATA / "recorded-by-0.1.0.sqlite"):  # fmt: skip
        records = nbgpumon.load(old).records
        assert records and {r.children for r in records} == {()}, old
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'children'").fetchone()
    before = nbgpumon.load(path).records
    writer = RecordingWriter(path, Timeline(COLUMNS), INFO)
    writer.add_cell(_cell(0, (_child(21, 2.0),)))
    _write(writer, path)
    assert nbgpumon.load(path, session=1).records == before
    (new,) = nbgpumon.load(path, session=writer.session_id).records
    assert new.children == (_child(21, 2.0),)
    with contextlib.closing(sqlite3.connect(path)) as db:
        schemas = [s for (s,) in db.execute("SELECT schema FROM session ORDER BY id")]
        keyed = db.execute("PRAGMA index_list(children)").fetchall()
    assert schemas == [3, SCHEMA_VERSION] and SCHEMA_VERSION >= 5
    assert any(unique for _, _, unique, *_ in keyed)  # (session, idx, pid, started)


def test_a_file_that_is_not_a_recording_gets_no_children_table(tmp_path):
    path = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE cells (x)")
        db.commit()
    before = path.read_bytes()
    with pytest.raises(nbgpumon.RecordingError, match="not an nbgpumon recording"):
        RecordingWriter(path, Timeline(COLUMNS), INFO)
    assert path.read_bytes() == before


def _cell_json(path: Path, count: int) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        (text,) = db.execute(
            "SELECT record FROM cells WHERE execution_count = ?", (count,)
        ).fetchone()
    return text
