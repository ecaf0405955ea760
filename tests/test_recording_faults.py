"""A recording that meets a fault says so once, in words, under the cell during which it
happened (invariant 14), and what it had committed loads back: a disk that fills, a file
system the kernel turns read-only, and the file deleted, moved or replaced while recording
(then the recording goes on in a new file at its path, or stops where the file there now is
not its own). Real kernels, real SQLite, real file systems: a tmpfs of a few MiB, an ext4
image on a loop device. A fault the writer meets while no cell runs is said at the end of the
next cell."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon._recording.faults import FULL, IO_ERROR, PERMISSION, classify
from nbgpumon._recording.file_identity import SAME, FileIdentity
from nbgpumon._recording.notices import Kept, Stopped
from nbgpumon._views.status.recorder import notice_line

from kernel_client import Kernel
from required import MOUNTS, skip_unless_required

# A cell that waits, with a deadline, until ``{cond}`` holds of the recorder ``_r`` (never a
# fixed sleep); it prints the figures the test compares with what loads back.
WAIT = (
    "import time as _t, nbgpumon as _n\n"
    "_r = _n.monitor()._session.recording_control.writer\n"
    "_d = _t.monotonic() + 60\n"
    "while not ({cond}) and _t.monotonic() < _d:\n"
    "    _t.sleep(0.02)\n"
    "print('WAITED', bool({cond}), _r.cells_written, _r.rows_written, _r.session_id)"
)
ALL_CELLS_WRITTEN = "_r.cells_written == len(_n.cells())"
# in a new file after the old one went: the cell that saw it go and those after it
WRITTEN_AT_LEAST = "_r.cells_written >= {}"
FAILED = "_r.failed"


def _mount(args: list[str], what: str) -> None:
    if os.geteuid() != 0:
        skip_unless_required(f"{what} needs root (CI runs the tests as root)", MOUNTS)
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode:
        skip_unless_required(f"{what} is not permitted here: {done.stderr.strip()}", MOUNTS)


def _umount(where: Path) -> None:
    # lazy: a kernel that failed to stop must not leave the mount behind
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards whatever happened."""
    where = tmp_path / "disk"
    where.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], "mounting a tmpfs")
    try:
        yield where
    finally:
        _umount(where)


@pytest.fixture
def ext4_disk(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """An 8 MiB ext4 image on a loop device, mounted ``errors=remount-ro``, and the sysfs file
    that makes the kernel meet a file system error on it (it then turns the file system
    read-only under open files, as after a failing disk; ``mount -o remount,ro`` refuses while
    the recording holds its file open for writing)."""
    image, where = tmp_path / "ext4.img", tmp_path / "ext4"
    where.mkdir()
    if shutil.which("mkfs.ext4") is None:
        skip_unless_required("mkfs.ext4 is not installed", MOUNTS)
    with open(image, "wb") as f:
        f.truncate(8 * 2**20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    _mount(["-o", "loop,errors=remount-ro", str(image), str(where)], "mounting a loop device")
    try:
        device = subprocess.run(
            ["findmnt", "-n", "-o", "SOURCE", str(where)], capture_output=True, text=True
        ).stdout.strip()
        trigger = Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
        if not trigger.exists():
            skip_unless_required(
                f"this kernel has no {trigger} to make a file system error with", MOUNTS
            )
        yield where, trigger
    finally:
        _umount(where)


def _stdout(kernel: Kernel, code: str) -> str:
    msgs = kernel.run(code, timeout=120)
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")


def _waited(out: str) -> tuple[int, int, int]:
    """The WAIT cell's figures: cells and samples written, session id (its condition held)."""
    (line,) = [line for line in out.splitlines() if line.startswith("WAITED")]
    _, held, cells, rows, session = line.split()
    assert held == "True", out
    return int(cells), int(rows), int(session)


def _recording(kernel: Kernel, path: Path, cells: int = 4) -> tuple[int, int]:
    """Start recording to ``path`` and run ``cells`` cells, until every cell is in the file;
    the cells and samples written then."""
    _stdout(kernel, "%load_ext nbgpumon")
    assert f"recording to {path} (session 1)" in _stdout(kernel, f"%gpumon record {path}")
    for i in range(cells):
        _stdout(kernel, f"x{i} = bytearray({i} * 2**16)")
    written, rows, _ = _waited(_stdout(kernel, WAIT.format(cond=ALL_CELLS_WRITTEN)))
    assert written >= cells
    return written, rows


def _notices(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("nbgpumon: ")]


FILL = (
    "import os\n"
    "fd = os.open({filler!r}, os.O_WRONLY | os.O_CREAT)\n"
    "try:\n"
    "    while True:\n"
    "        os.write(fd, bytes(65536))\n"
    "except OSError:\n"
    "    pass  # the disk is full\n"
    "os.close(fd)\n"
)


def _said_once_then_status(kernel: Kernel, out: str, pattern: str) -> str:
    """The fault's line: exactly once under the cell ``out`` came from, in no later cell, and
    the words ``%gpumon record`` says afterwards."""
    said = _notices(out)
    assert len(said) == 1 and re.fullmatch(pattern, said[0]), out
    assert _notices(_stdout(kernel, "y = 1")) == []
    assert _stdout(kernel, "%gpumon record").strip() == said[0]
    return said[0]


@pytest.mark.parametrize("filled_by", ["a filler file", "the recording itself"])
def test_a_full_disk_is_said_once_in_its_cell_and_every_committed_row_loads(
    small_disk, kernel, filled_by
):
    """The disk: a 4 MiB tmpfs. Filled by a filler file written in the cell, or, with a filler
    leaving 1 MiB (creating the session takes about 250 KiB of log), by the recording's own
    growth while a cell waits."""
    path, filler = small_disk / "run.sqlite", small_disk / "filler"
    if filled_by == "the recording itself":
        free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
        with open(filler, "wb") as f:
            f.write(bytes(free - 2**20))
    before, _ = _recording(kernel, path)
    fill = FILL.format(filler=str(filler)) if filled_by == "a filler file" else ""
    out = _stdout(kernel, fill + WAIT.format(cond=FAILED))
    cells, rows, _ = _waited(out)
    assert cells >= before  # the cells committed before the disk filled are all in the file
    line = _said_once_then_status(
        kernel,
        out,
        rf"nbgpumon: recording stopped: the disk holding {re.escape(str(path))} is full; the "
        rf"{cells} cells and .+ of samples before it are in the file "
        r"\(free some space, then %gpumon record PATH starts a new session\)",
    )
    assert "rollback" not in line
    off = _stdout(kernel, "%gpumon record off").strip()
    assert off == line  # what `record off` says of a recording that had stopped
    kernel.stop()
    session = nbgpumon.load(path)
    assert len(session.records) == cells and len(session.times) == rows
    assert not session.damage


def test_a_file_system_turned_read_only_is_said_once_and_what_was_committed_loads(
    ext4_disk, kernel
):
    """The fault: the kernel meets an ext4 error (``trigger_fs_error``) while a cell runs, and,
    mounted errors=remount-ro, turns the file system read-only under the open recording."""
    where, trigger = ext4_disk
    path = where / "run.sqlite"
    before, _ = _recording(kernel, path)
    running = kernel.submit(WAIT.format(cond=FAILED))
    trigger.write_text("nbgpumon test\n")
    msgs = kernel.wait(running, timeout=120)
    out = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    cells, rows, _ = _waited(out)
    assert cells >= before
    _said_once_then_status(
        kernel,
        out,
        rf"nbgpumon: recording stopped: the file system holding {re.escape(str(path))} became "
        rf"read-only; the {cells} cells and .+ of samples before it are in the file \(.+\)",
    )
    kernel.stop()
    session = nbgpumon.load(path)
    assert len(session.records) == cells and len(session.times) == rows


@pytest.mark.parametrize("leaving", ["its -wal and -shm too", "only the file"])
def test_a_file_deleted_while_recording_is_said_and_recording_goes_on_in_a_new_file(
    kernel, tmp_path, leaving
):
    """The fault: the cell deletes the recording (``rm run.sqlite*``, or the file alone, its
    log left beside it: that log must not end up in the new file)."""
    path = tmp_path / "run.sqlite"
    _recording(kernel, path)
    names = [path, Path(f"{path}-wal"), Path(f"{path}-shm")] if "too" in leaving else [path]
    remove = "".join(f"os.remove({str(p)!r})\n" for p in names if p.exists())
    gone = "getattr(_r.state.last, 'what', '') == 'deleted'"  # (FileWent: its file went)
    out = _stdout(kernel, "import os\n" + remove + WAIT.format(cond=gone))
    _said_once_then_status(
        kernel,
        out,
        rf"nbgpumon: {re.escape(str(path))} was deleted while recording; recording goes on in "
        rf"a new file at {re.escape(str(path))} \(session 1\); the \d+ cells and .+ of samples "
        r"before it are lost with the old file",
    )
    for i in range(3):
        _stdout(kernel, f"after{i} = {i}")
    # the cell that deleted it, `y = 1`, `%gpumon record` and the three (and the waiting cell
    # before it, whose end the writer may have reached before or after the old file went)
    _, _, session = _waited(_stdout(kernel, WAIT.format(cond=WRITTEN_AT_LEAST.format(6))))
    assert session == 1
    assert _stdout(kernel, "%gpumon record off").startswith("nbgpumon: recording stopped; ")
    session = nbgpumon.load(path)
    labels = [r.label for r in session.records]
    assert [f"after{i} = {i}" for i in range(3)] == [x for x in labels if x.startswith("after")]
    assert not any(x.startswith("x0 = ") for x in labels)  # nothing of the old file came back
    assert len(session.times) > 0
    assert not list(tmp_path.glob("run.sqlite-*"))  # closed: no log left beside it


def test_a_file_moved_away_keeps_its_rows_and_recording_goes_on_at_the_path(kernel, tmp_path):
    """The fault: the cell renames the recording (its -wal and -shm stay at the old name)."""
    path, moved = tmp_path / "run.sqlite", tmp_path / "moved.sqlite"
    _recording(kernel, path)
    out = _stdout(kernel, f"import os\nos.rename({str(path)!r}, {str(moved)!r})\n"
                  + WAIT.format(cond="getattr(_r.state.last, 'what', '') == 'moved'"))  # fmt: skip
    line = _said_once_then_status(
        kernel,
        out,
        rf"nbgpumon: {re.escape(str(path))} was moved away while recording; recording goes on "
        rf"in a new file at {re.escape(str(path))} \(session 1\); the old file, wherever it "
        r"went, keeps the \d+ cells and .+ of samples before it",
    )
    kept = int(re.search(r"keeps the (\d+) cells", line).group(1))
    _stdout(kernel, "z = 3")
    # the cell that moved it, `y = 1`, `%gpumon record`, `z = 3` (and perhaps the one before)
    _, _, session = _waited(_stdout(kernel, WAIT.format(cond=WRITTEN_AT_LEAST.format(4))))
    assert session == 1
    _stdout(kernel, "%gpumon record off")
    assert len(nbgpumon.load(moved).records) == kept  # its log was folded into it
    assert "z = 3" in [r.label for r in nbgpumon.load(path).records]


def test_a_file_replaced_by_a_foreign_file_between_cells_is_never_written(kernel, tmp_path):
    """The fault: while no cell runs, another program's SQLite file is moved over the path
    (``os.replace``); it is said by the next cell (here ``%gpumon record``, whose status is
    the same line: said once, not twice), and the file is left byte for byte as it was, with
    nothing made beside it."""
    path, foreign = tmp_path / "run.sqlite", tmp_path / "other.sqlite"
    _recording(kernel, path)
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        db.executescript("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');")
    digest = hashlib.sha256(foreign.read_bytes()).hexdigest()
    wal = Path(f"{path}-wal")
    assert wal.exists()
    os.replace(foreign, path)
    deadline = time.monotonic() + 60  # the writer has noticed once its own log is gone
    while wal.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not wal.exists()
    # the writer lets the old file go before it says why: wait for its words, outside any cell
    # (an execution not kept in history is no cell, so nothing is printed under it)
    kernel.run(WAIT.format(cond=FAILED), timeout=120, store_history=False)
    out = _stdout(kernel, "%gpumon record")  # the status asked at once: the line, once
    _said_once_then_status(
        kernel,
        out,
        rf"nbgpumon: recording stopped: {re.escape(str(path))} was replaced by another file "
        r"while recording, and nbgpumon writes nothing into what is there now \(it is not an "
        r"nbgpumon recording \(an SQLite file with the tables users\); record to a new file "
        r"instead\); the \d+ cells and .+ of samples before it are lost with the old file",
    )
    kernel.stop()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sqlite"]


def test_the_identity_check_says_same_batch_after_batch_and_opens_nothing(tmp_path):
    """Checked before each batch (every FLUSH_INTERVAL on the writer's thread) for as long as
    the recording runs: an unchanged file is the same every time, its -wal and -shm appearing
    on the way, and no check leaves a descriptor open. (What a check costs:
    bench/identity_check.py, target 1/10,000 of the interval.)"""
    path = tmp_path / "run.sqlite"
    path.write_bytes(b"")
    identity = FileIdentity(path)
    try:
        opened = len(os.listdir("/proc/self/fd"))
        said = [identity.check() for _ in range(1000)]
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).write_bytes(b"")
        said += [identity.check() for _ in range(1000)]
        assert said == [SAME] * 2000
        assert len(os.listdir("/proc/self/fd")) == opened
    finally:
        identity.close()


def test_an_io_error_and_a_permission_taken_away_are_named_as_such(tmp_path):
    """No real fault here (this machine has no device-mapper for a failing disk, and root
    writes through any permission): SQLite's own error objects, as its write would raise them,
    classified against a real writable folder; the lines name the cause and SQLite's words."""
    path = tmp_path / "run.sqlite"
    path.write_bytes(b"")
    io = sqlite3.OperationalError("disk I/O error")
    io.sqlite_errorcode = 778  # SQLITE_IOERR_WRITE: the folder is fine, so it stays an I/O error
    assert classify(io, path) == IO_ERROR
    assert notice_line(Stopped(IO_ERROR, path, Kept(0, None), str(io))) == (
        f"recording stopped: an I/O error writing {path} (disk I/O error); nothing was in it "
        "yet (%gpumon record PATH starts a new one)"
    )
    assert classify(PermissionError(errno.EACCES, "Permission denied"), path) == PERMISSION
    assert notice_line(Stopped(PERMISSION, path, Kept(3, 2.0))).startswith(
        f"recording stopped: permission to write {path} was taken away; the 3 cells and 2.0 s "
        "of samples before it are in the file"
    )
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13
    assert classify(full, path) == FULL
