"""On a real NVIDIA GPU (``pytest -m gpu``): with ``%gpumon trace on``, a cell that runs out of
GPU memory saves torch's memory snapshot, and the post-mortem's largest live block is the
snapshot's."""

from __future__ import annotations

import os
import pickle
import re

import pytest

from nbgpumon._foundation.wording import format_bytes

from gpu_required import cuda_tests
from notebook_runner import run_cells

torch, pytestmark = cuda_tests()
BIG = "big = torch.empty(2**31, dtype=torch.uint8, device='cuda')"
HUGE = "huge = torch.empty(10**15, dtype=torch.uint8, device='cuda')"
OOM_CELL = f"# a 2 GiB tensor, then one no GPU has\n{BIG}\n{HUGE}"
HEADING = "  largest live blocks by the cell and line that allocated them:"
SNAPSHOT = re.compile(
    r"^  memory snapshot: (\S+) \((.+); open it at https://pytorch.org/memory_viz\)$"
)
CELL_FILE = re.compile(r"ipykernel_\d+")


@pytest.fixture(scope="module")
def oom():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import torch\nx0 = torch.empty(2**20, dtype=torch.uint8, device='cuda')",
            "%gpumon trace on",
            OOM_CELL,  # In[4]
        ],
        timeout=300,
    )
    run = runs[3]
    found = [m for m in map(SNAPSHOT.match, run.stdout.splitlines()) if m]
    yield run, found
    for m in found:  # the file and the folder nbgpumon made for it
        os.remove(m.group(1))
        if os.path.basename(os.path.dirname(m.group(1))).startswith("nbgpumon-oom-"):
            os.rmdir(os.path.dirname(m.group(1)))


def test_the_post_mortem_names_the_snapshot_and_the_line_that_holds_the_memory(oom):
    run, found = oom
    assert run.error == "OutOfMemoryError"
    lines = run.stdout.splitlines()
    assert lines[lines.index(HEADING) + 1] == f"    [4] line 2: {BIG} — 2.0 GiB", run.stdout
    assert len(found) == 1, run.stdout
    assert os.path.basename(found[0].group(1)) == "oom-4.pickle"


def test_the_snapshot_loads_and_its_largest_block_is_the_post_mortems_first_line(oom):
    run, (found,) = oom
    with open(found.group(1), "rb") as f:
        snapshot = pickle.load(f)
    live = [
        b
        for segment in snapshot["segments"]
        for b in segment["blocks"]
        if b["state"] == "active_allocated"
    ]
    biggest = max(live, key=lambda b: b["size"])
    cell_frame = next(f for f in biggest["frames"] if CELL_FILE.search(f["filename"]))
    assert cell_frame["line"] == 2
    assert biggest["size"] >= 2**31 and format_bytes(biggest["size"]) == "2.0 GiB"
    lines = run.stdout.splitlines()
    assert lines[lines.index(HEADING) + 1].endswith(f"— {format_bytes(biggest['size'])}")
    # memory_viz's timeline: the trace ring buffer is in it, the failed request too
    actions = {e["action"] for trace in snapshot["device_traces"] for e in trace}
    assert {"alloc", "oom"} <= actions, actions
    assert found.group(2) == format_bytes(os.path.getsize(found.group(1)))
