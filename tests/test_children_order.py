"""Which cell started a child, in a real kernel, when cells are sent at once (Run All): the last
PID handed out is read just after a cell's end for the next cell's start (issue 43: the start
reads nothing), so a child started as the last thing of one cell is that cell's and a child
started first thing in the next is the next one's, whichever order the put-off end and the
next cell's start take."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernel_client import Kernel
from notebook_runner import fake_nvml_env
from waiting import until

GIB = 2**30
ROUNDS = 3
HOLDER = Path(__file__).parent / "children" / "holder.py"
# a child that says it holds a GiB on the fake GPU for 1.5 s (a child on no GPU is no cell's)
CHILD = f"subprocess.Popen([{sys.executable!r}, {str(HOLDER)!r}, str({GIB}), '10', '1.5'])"
# run as a front end's own code: each cell's label and the PIDs of the children it was given
PROBE = (
    "import json as _json, nbgpumon as _nbg\n"
    "print('CELLS=' + _json.dumps({r.label: [c.pid for c in r.children] for r in _nbg.cells()}))"
)


@pytest.fixture
def kernel(monkeypatch, tmp_path):
    env = fake_nvml_env(
        devices=[{"name": "Fake GPU", "used": GIB, "total": 16 * GIB}],
        processes=[
            {"pid": "self", "used": 2**20},
            {"pid": "descendants", "used_from": str(tmp_path)},
        ],
    )
    env["GPU_USE"] = str(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    started = Kernel()
    yield started
    started.stop()


def _cells(kernel: Kernel) -> dict[str, list[int]]:
    msgs = kernel.run(PROBE, store_history=False)
    out = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    (line,) = [x for x in out.splitlines() if x.startswith("CELLS=")]
    return json.loads(line[len("CELLS=") :])


def test_a_child_at_one_cells_end_and_one_first_thing_in_the_next_each_go_to_their_cell(kernel):
    kernel.run("%load_ext nbgpumon\nimport json, subprocess, sys")
    pids: dict[str, int] = {}
    for n in range(ROUNDS):
        # sent together: the second cell's request is queued while the first one runs
        last = kernel.submit(f"# last {n}\nx = 1\nlast_{n} = {CHILD}")
        first = kernel.submit(f"# first {n}\nfirst_{n} = {CHILD}\ny = 1")
        kernel.wait(last)
        kernel.wait(first)
        msgs = kernel.run(
            f"print('PIDS=' + json.dumps([last_{n}.pid, first_{n}.pid]))\n"
            f"last_{n}.wait(); first_{n}.wait()"
        )
        out = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
        (line,) = [x for x in out.splitlines() if x.startswith("PIDS=")]
        pids[f"# last {n}"], pids[f"# first {n}"] = json.loads(line[len("PIDS=") :])

    def charged() -> dict[str, list[int]] | None:
        cells = _cells(kernel)
        return cells if all(cells.get(label) for label in pids) else None

    cells = until(charged, "each cell's child charged to it")
    for label, pid in pids.items():
        assert cells[label] == [pid], (label, cells)
