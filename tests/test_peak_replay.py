"""The peak's transient part by cell line, replayed from an allocation history in torch's
snapshot layout (``device_traces``: allocs with their Python stacks, frees without), without a
GPU: the moment of the peak is found by the figures alone, and what was live then and freed
before the cell's end is named by the line that allocated it."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.compilerop import CachingCompiler

from nbgpumon._forensics.peak_replay import replay_to_peak
from nbgpumon._ledger.traced import ReplayCut
from nbgpumon._views.words.traced import traced_line

MIB = 2**20


def alloc(addr: int, size: int, *frames: dict) -> dict[str, Any]:
    return {"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": list(frames)}


def free(addr: int, size: int) -> list[dict[str, Any]]:
    """torch's two events for one free: asked for, then done."""
    return [
        {"action": "free_requested", "addr": addr, "size": size, "stream": 0, "frames": []},
        {"action": "free_completed", "addr": addr, "size": size, "stream": 0, "frames": []},
    ]


def at(filename: str, line: int) -> dict[str, Any]:
    return {"name": "<module>", "filename": filename, "line": line}


@pytest.fixture
def cells():
    compiler = CachingCompiler()
    model = compiler.cache("w = torch.empty(2**20, device='cuda')\n", 2)
    step = compiler.cache(
        "h = w * 2\ny = h.relu()\nout = y.sum()\ndel h, y\nz = torch.empty(2**18, device='cuda')\n",
        3,
    )
    return compiler, model, step


def test_what_the_peak_held_and_the_cell_freed_is_named_by_its_line(cells):
    compiler, model, step = cells
    events = [
        alloc(0x1000, 4 * MIB, at(model, 1)),  # [2]'s w: alive throughout
        alloc(0x9000, 8 * MIB, at(step, 1)),  # h
        alloc(0xA000, 8 * MIB, at(step, 2)),  # y: the peak is 4 + 8 + 8 (+ out) MiB
        alloc(0xB000, 512, at(step, 3)),  # out
        *free(0x9000, 8 * MIB),
        *free(0xA000, 8 * MIB),
        alloc(0x9000, MIB, at(step, 5)),  # z, after the peak, at h's old address
    ]
    after = 4 * MIB + 512 + MIB
    peak = 4 * MIB + 16 * MIB + 512
    replay = replay_to_peak({"device_traces": [events]}, 0, after, peak, compiler._filename_map, 3)
    assert [(a.cell, a.line, a.source, a.bytes) for a in replay.found] == [
        (3, 1, "h = w * 2", 8 * MIB),
        (3, 2, "y = h.relu()", 8 * MIB),
    ]
    assert replay.cut is None and replay.bytes == 16 * MIB
    # the split's figure (peak less the end) is 1 MiB less: z came after the peak
    assert peak - after == replay.bytes - MIB


def test_a_peak_held_by_an_earlier_cells_block_freed_now_names_that_cell(cells):
    compiler, model, step = cells
    events = [alloc(0x1000, 4 * MIB, at(model, 1)), alloc(0x9000, 8 * MIB, at(step, 1)),
              *free(0x1000, 4 * MIB)]  # fmt: skip
    replay = replay_to_peak({"device_traces": [events]}, 0, 8 * MIB, 12 * MIB,
                            compiler._filename_map, 3)  # fmt: skip
    assert [(a.cell, a.line, a.bytes) for a in replay.found] == [(2, 1, 4 * MIB)]


def test_a_history_that_does_not_reach_back_says_so(cells):
    compiler, _, _ = cells
    short = [*free(0x9000, 8 * MIB)]  # the ring kept only the free; the alloc fell out
    replay = replay_to_peak({"device_traces": [short]}, 0, 0, 8 * MIB, compiler._filename_map, 3)
    assert [(a.before_history, a.line, a.bytes) for a in replay.found] == [(True, 0, 8 * MIB)]
    assert traced_line(replay.found[0]) == (
        "[?] no cell line (allocated before the recorder's kept history) — 8.0 MiB"
    )
    never = replay_to_peak({"device_traces": [short]}, 0, 0, 20 * MIB, compiler._filename_map, 3)
    assert never.found == () and never.cut == ReplayCut(0, 2)
    assert traced_line(never.cut) == (
        "(the recorder's history (2 events) does not reach back to the peak)"
    )
    empty = replay_to_peak({"device_traces": []}, 0, 0, MIB, compiler._filename_map, 3)
    assert empty.cut == ReplayCut(0, 0)
    assert traced_line(empty.cut) == "(the recorder kept no history of allocations)"


def test_a_cell_that_ended_at_its_peak_freed_nothing_of_it(cells):
    compiler, _, step = cells
    events = [alloc(0x9000, 8 * MIB, at(step, 1))]
    replay = replay_to_peak({"device_traces": [events]}, 0, 8 * MIB, 8 * MIB,
                            compiler._filename_map, 3)  # fmt: skip
    assert replay.found == () and replay.cut is None
