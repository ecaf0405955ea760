"""The out-of-memory flight recorder without a GPU: a session whose cell runs out of memory
while tracing records saves torch's snapshot (a stand-in torch at the library boundary, the
snapshot in torch's real layout) to a new file, and the post-mortem names the lines and the
file."""

from __future__ import annotations

import os
import pickle
import re
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from IPython.core.compilerop import CachingCompiler
from test_tracing import KERNEL_FRAMES, FakeCuda, block, frame, snapshot

from nbgpumon._api.monitor import Monitor
from nbgpumon._forensics.oom_snapshot import (
    FAILED,
    FlightRecord,
    SnapshotStore,
    candidate_names,
    flight_record,
)
from nbgpumon._ledger.traced import TracedAllocation
from nbgpumon._views.cell_end import cell_lines
from nbgpumon._views.memory.oom import snapshot_line

from fake_shell import shell_with
from unprivileged import as_a_user, read_only_folder

MIB = 2**20
GIB = 2**30
CELL = (
    "import torch\n"
    "big = torch.empty(2**31, dtype=torch.uint8, device='cuda')\n"
    "small = torch.empty(2**20, dtype=torch.uint8, device='cuda')\n"
    "boom = torch.empty(10**15, dtype=torch.uint8, device='cuda')\n"
)
SNAPSHOT_LINE = re.compile(
    r"^  memory snapshot: (\S+) \(([\d.]+ [KMG]?i?B); open it at https://pytorch.org/memory_viz\)$"
)
TorchOom = type("OutOfMemoryError", (RuntimeError,), {"__module__": "torch"})


def oom() -> BaseException:
    return TorchOom(
        "CUDA out of memory. Tried to allocate 909.49 TiB. GPU 0 has a total capacity of "
        "139.72 GiB of which 137.11 GiB is free."
    )


@pytest.fixture
def fake_torch(monkeypatch, tmp_path):
    """torch with CUDA up, its recorder, and ``_snapshot()`` with the trace ring buffer."""
    torch = ModuleType("torch")
    torch.__version__ = "2.13.0"
    torch.cuda = FakeCuda(initialised=True)
    torch._C = SimpleNamespace(_cuda_isHistoryEnabled=lambda: torch.cuda.recording)
    torch.full_snapshots = 0

    def full_snapshot():
        torch.full_snapshots += 1
        return {
            "segments": list(torch.cuda.segments),
            "device_traces": [[{"action": "oom", "addr": 0, "size": 10**15, "frames": []}]],
            "allocator_settings": {},
        }

    torch.cuda.memory._snapshot = staticmethod(full_snapshot)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the kernel's folder goes
    return torch


@pytest.fixture
def kernel(fake_torch):
    """A session (no GPU, sampler not started) over a shell with IPython's own compiler."""
    shell = shell_with()
    shell.compile = CachingCompiler()
    session = Monitor(nvml_module=None, shell=lambda: shell)
    yield SimpleNamespace(session=session, shell=shell, torch=fake_torch)
    session.close()


def run_oom_cell(kernel, count: int = 4):
    """The cell above, run to its out-of-memory error: 2 GiB and 1 MiB live from its lines,
    and 4 MiB from before tracing began (no stack). Returns (record, text under the cell)."""
    session, torch = kernel.session, kernel.torch
    filename = kernel.shell.compile.cache(CELL, count)
    opened = session.cell_pipeline.begin(count, CELL)
    torch.cuda.allocations += 2
    torch.cuda.segments = snapshot(
        block(0x10000000, 4 * MIB, []),
        block(0x10000000 + 4 * MIB, GIB * 2, [frame(filename, 2), *KERNEL_FRAMES]),
        block(0x10000000 + 4 * MIB + 2 * GIB, MIB, [frame(filename, 3), *KERNEL_FRAMES]),
    )["segments"]
    error = oom()
    return ended(session, opened, f"OutOfMemoryError: {error}", count, error)


def ended(session, opened, error_line, count, error):
    """The cell's end, as the hooks run it: (record, text under the cell, no summary)."""
    outcome = session.cell_pipeline.end(opened, "oom", error_line, count, error)
    return outcome.record, "\n".join(cell_lines(outcome, summary=False))


def snapshot_path(text: str) -> str:
    (line,) = [m for m in map(SNAPSHOT_LINE.match, text.splitlines()) if m]
    return line.group(1)


def test_an_oom_while_tracing_saves_a_snapshot_and_lists_the_largest_lines(kernel):
    assert kernel.session.trace(True).startswith("allocation tracing on")
    _, text = run_oom_cell(kernel)
    lines = text.splitlines()
    at = lines.index("  largest live blocks by the cell and line that allocated them:")
    assert lines[at + 1 : at + 4] == [
        "    [4] line 2: big = torch.empty(2**31, dtype=torch.uint8, device='cuda') — 2.0 GiB",
        "    no Python stack (allocated before tracing began, by autograd or by another "
        "thread) — 4.0 MiB",
        "    [4] line 3: small = torch.empty(2**20, dtype=torch.uint8, device='cuda') — 1.0 MiB",
    ]
    path = snapshot_path(text)
    assert os.path.dirname(path).startswith(os.path.join(tempfile.tempdir, "nbgpumon-oom-"))
    assert os.path.basename(path) == "oom-4.pickle"
    with open(path, "rb") as f:
        saved = pickle.load(f)
    biggest = max(
        (b for s in saved["segments"] for b in s["blocks"] if b["state"] == "active_allocated"),
        key=lambda b: b["size"],
    )
    assert (biggest["size"], biggest["frames"][0]["line"]) == (2 * GIB, 2)
    assert saved["device_traces"][0][0]["action"] == "oom"  # memory_viz's timeline has it
    assert kernel.torch.full_snapshots == 1  # one snapshot per out-of-memory cell
    assert text.index("memory snapshot:") < text.index("what to try")
    # the cell's own trace lines would repeat the post-mortem's: it lists them alone
    assert "nbgpumon trace:" not in text


def test_next_to_a_recording_and_never_over_an_existing_file(kernel, tmp_path):
    kernel.session.trace(True)
    recording = tmp_path / "run.sqlite"
    kernel.session.record(recording)
    theirs = tmp_path / "run.sqlite.oom-4.pickle"
    theirs.write_bytes(b"someone else's file")
    _, text = run_oom_cell(kernel)
    assert snapshot_path(text) == str(tmp_path / "run.sqlite.oom-4-2.pickle")
    assert theirs.read_bytes() == b"someone else's file"
    with open(snapshot_path(text), "rb") as f:
        assert "segments" in pickle.load(f)


def test_a_folder_that_cannot_be_written_gives_one_line_and_no_file(kernel, tmp_path):
    kernel.session.trace(True)
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    tempfile.tempdir = str(not_a_folder)  # (the fixture puts it back)
    _, text = run_oom_cell(kernel)
    (line,) = [line for line in text.splitlines() if "memory snapshot" in line]
    assert line.startswith("  memory snapshot not saved: NotADirectoryError: ")
    assert "Traceback" not in text
    assert "[4] line 2: big = " in text  # the lines are still named
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_read_only_folder_gives_one_line(tmp_path):
    # as a user (root writes into any folder; CI runs as root: there, a fork as nobody)
    def save_there():
        # the folder is reached and read, not written: a read-only folder, not a lost path
        assert os.access(folder, os.R_OK | os.X_OK) and not os.access(folder, os.W_OK)
        return flight_record(
            lambda: snapshot(block(0x1000, MIB, [])), SnapshotStore(), {}, 3, str(folder / "r")
        )

    with read_only_folder(tmp_path) as folder:
        found = as_a_user(save_there)
        assert list(folder.iterdir()) == []
    assert snapshot_line(found).startswith("memory snapshot not saved: PermissionError: ")
    assert "\n" not in snapshot_line(found) and found.path is None


def test_a_snapshot_that_cannot_be_pickled_leaves_no_partial_file(tmp_path):
    bad = snapshot(block(0x1000, MIB, []))
    bad["allocator_settings"] = {"hook": lambda: None}  # pickle refuses a lambda
    found = flight_record(lambda: bad, SnapshotStore(), {}, 3, str(tmp_path / "run.sqlite"))
    line = snapshot_line(found)
    assert re.match(r"memory snapshot not saved: (PicklingError|AttributeError): ", line)
    assert "\n" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_failing_snapshot_gives_one_line():
    def fails():
        raise RuntimeError("CUDA error: an illegal memory access\nmore")

    found = flight_record(fails, SnapshotStore(), {}, 3, None)
    assert found == FlightRecord(
        FAILED,
        problem="memory snapshot not taken: RuntimeError: CUDA error: an illegal memory access",
    )


def test_without_tracing_the_post_mortem_says_what_trace_on_would_give(kernel, tmp_path):
    _, text = run_oom_cell(kernel)
    assert (
        "  memory snapshot: none; %gpumon trace on saves one at the next out-of-memory error and "
        "names the lines that allocated the live blocks"
    ) in text.splitlines()
    assert "largest live blocks" not in text
    assert kernel.torch.full_snapshots == 0


def test_a_cell_that_initialised_cuda_gets_no_snapshot_yet(kernel):
    kernel.torch.cuda.initialised = False
    assert "armed" in kernel.session.trace(True)
    filename = kernel.shell.compile.cache(CELL, 2)
    opened = kernel.session.cell_pipeline.begin(2, CELL)
    kernel.torch.cuda.initialised = True  # this cell brought CUDA up, then ran out
    kernel.torch.cuda.segments = snapshot(block(0x1000, GIB, [frame(filename, 2)]))["segments"]
    _, text = ended(kernel.session, opened, "OutOfMemoryError", 2, oom())
    assert (
        "  memory snapshot: none; allocation tracing was not recording yet during this cell (it "
        "starts after the cell that initialises CUDA)"
    ) in text.splitlines()
    assert kernel.torch.full_snapshots == 0
    _, text = run_oom_cell(kernel, count=3)  # the next one is recorded
    assert os.path.basename(snapshot_path(text)) == "oom-3.pickle"


def test_only_the_last_few_snapshots_are_kept_and_only_nbgpumons_are_deleted(tmp_path):
    store = SnapshotStore(keep=2)
    base = str(tmp_path / "run.sqlite")
    first = store.save({"n": 1}, base, 1)
    replacement = tmp_path / "theirs"
    replacement.write_bytes(b"theirs")
    os.replace(replacement, first)  # the user put their own file where the first one was
    second = store.save({"n": 2}, base, 2)
    third = store.save({"n": 3}, base, 3)
    fourth = store.save({"n": 4}, base, 4)
    assert store.files == [third, fourth]
    assert not os.path.exists(second)  # nbgpumon's own: deleted
    assert Path(first).read_bytes() == b"theirs"  # not nbgpumon's any more: kept
    with open(fourth, "rb") as f:
        assert pickle.load(f) == {"n": 4}


def test_file_names_next_to_a_recording_and_in_a_folder():
    names = candidate_names("/data/run.sqlite", 12)
    assert [next(names), next(names), next(names)] == [
        "/data/run.sqlite.oom-12.pickle",
        "/data/run.sqlite.oom-12-2.pickle",
        "/data/run.sqlite.oom-12-3.pickle",
    ]
    assert next(candidate_names("/tmp/nbgpumon-oom-x/", None)) == "/tmp/nbgpumon-oom-x/oom.pickle"
    assert len(list(candidate_names("/d/r", 1))) == 100


def test_a_cell_that_keeps_blocks_while_tracing_gets_its_allocations_in_the_record(kernel):
    assert kernel.session.trace(True).startswith("allocation tracing on")
    session, torch = kernel.session, kernel.torch
    filename = kernel.shell.compile.cache(CELL, 5)
    opened = session.cell_pipeline.begin(5, CELL)
    torch.cuda.allocations += 1
    torch.cuda.segments = snapshot(
        block(0x10000000, GIB * 2, [frame(filename, 2), *KERNEL_FRAMES])
    )["segments"]
    outcome = session.cell_pipeline.end(opened, "ok", "", 5, None)
    source = "big = torch.empty(2**31, dtype=torch.uint8, device='cuda')"
    # as data: the words come when shown
    assert outcome.record.traced == (TracedAllocation(2 * GIB, 1, 0, 5, 2, source, None, None),)
    assert session.data.records[-1] is outcome.record  # stored once, its allocations in it
    line = f"[5] line 2: {source} — 2.0 GiB"
    assert cell_lines(outcome, summary=False) == [f"nbgpumon trace: {line}"]
