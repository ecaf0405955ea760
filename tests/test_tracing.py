"""Allocation tracing without a GPU: attribution of a snapshot in torch's real format, the
tracer's state machine against a stand-in ``torch`` module, and the one-line format."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from ipykernel.compiler import XCachingCompiler
from IPython.core.compilerop import CachingCompiler
from test_cell_kinds import torch_record

from nbgpumon._forensics.peak_replay import replay_to_peak
from nbgpumon._forensics.tracing import AllocationTracer, attribute_blocks, live_block_keys
from nbgpumon._forensics.tracing_answer import OFF, ON, WAITING, TracingAnswer, TracingState
from nbgpumon._ledger.traced import ReplayCut, TracedAllocation
from nbgpumon._session.config import GPUMon
from nbgpumon._session.controls.tracing import TracingControl
from nbgpumon._views.words.traced import (
    format_traced,
    traced_line,
    tracing_line,
    tracing_state_words,
)

MIB = 2**20
GIB = 2**30
KERNEL_FRAMES = [  # what sits under a cell's <module> frame in a kernel (IPython, ipykernel)
    {"name": "run_code", "filename": "/site/IPython/core/interactiveshell.py", "line": 3701},
    {"name": "_run_module_as_main", "filename": "<frozen runpy>", "line": 198},
]


def frame(filename: str, line: int, name: str = "<module>") -> dict[str, Any]:
    return {"name": name, "filename": filename, "line": line}


def block(address: int, size: int, frames: list, state: str = "active_allocated") -> dict:
    """A block as ``torch.cuda.memory._snapshot()`` gives it (torch 2.11-2.13)."""
    return {
        "address": address,
        "size": size,
        "requested_size": size,
        "state": state,
        "frames": frames,
    }


def snapshot(*blocks: dict, device: int = 0) -> dict[str, Any]:
    """One segment holding ``blocks`` back to back, in torch's snapshot layout."""
    base = blocks[0]["address"] if blocks else 0
    total = sum(b["size"] for b in blocks)
    segment = {
        "device": device,
        "address": base,
        "total_size": total,
        "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
        "active_size": total,
        "requested_size": total,
        "stream": 0,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": [],
        "blocks": list(blocks),
    }
    return {"segments": [segment], "device_traces": [[]], "allocator_settings": {}}


@pytest.fixture
def compiler() -> CachingCompiler:
    """IPython's own compiler: cell names in ``_filename_map``, cell lines in linecache."""
    return CachingCompiler()


def test_surviving_blocks_are_grouped_by_cell_line_biggest_first(compiler):
    cell = compiler.cache("import torch\nw = torch.empty(1)\nv = torch.empty(4)\n", 5)
    snap = snapshot(
        block(0x1000, MIB, [frame(cell, 2), *KERNEL_FRAMES]),
        block(0x1000 + MIB, MIB, [frame(cell, 2), *KERNEL_FRAMES]),
        block(0x1000 + 2 * MIB, 4 * MIB, [frame(cell, 3), *KERNEL_FRAMES]),
        block(0x1000 + 6 * MIB, 8 * MIB, [frame(cell, 3)], state="inactive"),  # cached, free
    )
    found = attribute_blocks(snap, set(), compiler._filename_map, 5)
    assert found == [
        TracedAllocation(4 * MIB, 1, 0, 5, 3, "v = torch.empty(4)", None, None),
        TracedAllocation(2 * MIB, 2, 0, 5, 2, "w = torch.empty(1)", None, None),
    ]


def test_blocks_alive_when_the_cell_started_are_not_the_cells(compiler):
    old = compiler.cache("a = torch.empty(2**20, device='cuda')\n", 1)
    new = compiler.cache("b = torch.empty(2**20, device='cuda')\n", 2)
    kept = block(0x1000, MIB, [frame(old, 1), *KERNEL_FRAMES])
    alive_at_start = live_block_keys(snapshot(kept))
    after = snapshot(kept, block(0x1000 + MIB, MIB, [frame(new, 1), *KERNEL_FRAMES]))
    found = attribute_blocks(after, alive_at_start, compiler._filename_map, 2)
    assert [(a.cell, a.line, a.bytes) for a in found] == [(2, 1, MIB)]


def test_a_block_reallocated_at_the_same_address_by_the_cell_counts_as_new(compiler):
    old = compiler.cache("x = torch.empty(2**20, device='cuda')\n", 1)
    new = compiler.cache("del x\ny = torch.empty(2**20, device='cuda')\n", 2)
    alive_at_start = live_block_keys(snapshot(block(0x1000, MIB, [frame(old, 1)])))
    after = snapshot(block(0x1000, MIB, [frame(new, 2)]))  # the allocator reused the address
    found = attribute_blocks(after, alive_at_start, compiler._filename_map, 2)
    assert [(a.cell, a.line, a.source) for a in found] == [
        (2, 2, "y = torch.empty(2**20, device='cuda')")
    ]


def test_a_function_from_an_earlier_cell_names_both_cells(compiler):
    lib = compiler.cache(
        "def make(n):\n    return torch.empty(n, dtype=torch.uint8, device='cuda')\n", 3
    )
    use = compiler.cache("import torch\nz = make(2**30)\n", 7)
    snap = snapshot(block(0x1000, GIB, [frame(lib, 2, "make"), frame(use, 2), *KERNEL_FRAMES]))
    (found,) = attribute_blocks(snap, set(), compiler._filename_map, 7)
    assert (found.cell, found.line, found.caller_cell, found.caller_line) == (3, 2, 7, 2)
    assert found.source == "return torch.empty(n, dtype=torch.uint8, device='cuda')"
    assert format_traced(found) == (
        "[7] line 2 → [3] line 2: return torch.empty(n, dtype=torch.uint8, device='cuda') — 1.0 GiB"
    )


def test_a_function_called_from_its_own_cell_has_no_caller(compiler):
    cell = compiler.cache("def make():\n    return torch.ones(9)\nq = make()\n", 4)
    snap = snapshot(block(0x1000, 512, [frame(cell, 2, "make"), frame(cell, 3), *KERNEL_FRAMES]))
    (found,) = attribute_blocks(snap, set(), compiler._filename_map, 4)
    assert (found.cell, found.line, found.caller_cell) == (4, 2, None)


def test_identical_cells_share_a_filename_and_the_cell_that_ran_gets_its_own_count():
    kernel = XCachingCompiler()  # ipykernel names a cell file by a hash of its text
    text = "import torch\ny = torch.empty(2**30, dtype=torch.uint8, device='cuda')\n"
    first = kernel.cache(text, 4)
    again = kernel.cache(text, 9)
    assert first == again and first.endswith(".py")
    filename_map = {first: 4}  # a map that still names the earlier run
    snap = snapshot(block(0x1000, GIB, [frame(again, 2), *KERNEL_FRAMES]))
    (found,) = attribute_blocks(snap, set(), filename_map, 9, cell_filename=again)
    assert (found.cell, found.line, found.bytes) == (9, 2, GIB)
    assert found.source == "y = torch.empty(2**30, dtype=torch.uint8, device='cuda')"


def test_blocks_without_a_cell_frame_go_to_the_running_cell_with_no_line(compiler):
    compiler.cache("loss.backward()\n", 6)
    autograd = block(0x1000, 2 * MIB, [])  # allocated on autograd's thread: no Python stack
    worker = block(
        0x1000 + 2 * MIB,
        MIB,
        [
            frame("/site/torch/utils/data/_utils.py", 40, "pin"),
            frame("/home/me/load.py", 12, "run"),
        ],
    )
    found = attribute_blocks(snapshot(autograd, worker), set(), compiler._filename_map, 6)
    assert [(a.cell, a.line, a.source) for a in found] == [(6, 0, ""), (6, 0, "run (load.py:12)")]
    assert format_traced(found[0]) == (
        "[6] no cell line (no Python stack: autograd or another thread) — 2.0 MiB"
    )
    assert format_traced(found[1]) == "[6] no cell line (run (load.py:12)) — 1.0 MiB"


def test_devices_are_kept_apart(compiler):
    cell = compiler.cache("p = [torch.ones(1, device=f'cuda:{i}') for i in range(2)]\n", 2)
    snap = snapshot(block(0x1000, 512, [frame(cell, 1)]))
    snap["segments"] += snapshot(block(0x9000, 512, [frame(cell, 1)]), device=1)["segments"]
    found = attribute_blocks(snap, set(), compiler._filename_map, 2)
    assert sorted(a.device for a in found) == [0, 1]
    assert format_traced(next(a for a in found if a.device == 1)).endswith("— 512 B on cuda:1")


def test_long_source_lines_are_cut_to_80_characters(compiler):
    long_line = "y = torch.empty(" + "1 + " * 40 + "1, device='cuda')"
    cell = compiler.cache(f"{long_line}\n", 3)
    (found,) = attribute_blocks(
        snapshot(block(0x1000, 512, [frame(cell, 1)])), set(), compiler._filename_map, 3
    )
    assert len(found.source) == 80 and found.source.endswith("…")
    assert found.source.startswith("y = torch.empty(1 + 1 + ")


def test_format_traced_matches_the_documented_lines():
    plain = TracedAllocation(GIB, 1, 0, 7, 3, "y = torch.empty(…)", None, None)
    assert format_traced(plain) == "[7] line 3: y = torch.empty(…) — 1.0 GiB"
    called = TracedAllocation(GIB, 1, 0, 3, 5, "return torch.empty(n)", 7, 2)
    assert format_traced(called) == "[7] line 2 → [3] line 5: return torch.empty(n) — 1.0 GiB"
    several = TracedAllocation(3 * MIB, 3, 0, 2, 1, "", None, None)
    assert format_traced(several) == "[2] line 1 — 3.0 MiB in 3 blocks"


def test_a_records_traced_items_are_worded_when_shown_and_an_old_line_as_it_is():
    kept = TracedAllocation(GIB, 1, 0, 7, 3, "y = torch.empty(…)", None, None)
    assert traced_line(kept) == format_traced(kept)
    assert traced_line(ReplayCut(1, 1200)) == (
        "(the recorder's history (1,200 events) does not reach back to the peak)"
    )
    old = "[7] line 3: y = torch.empty(…) — 1.0 GiB"  # a recording's line before schema 7
    assert traced_line(old) is old


# -- the tracer against a stand-in torch ---------------------------------------------------
class FakeCuda:
    """Just the parts of ``torch.cuda`` the tracer may touch, with torch 2.13's signatures."""

    def __init__(self, initialised: bool) -> None:
        self.initialised = initialised
        self.recording = False
        self.calls: list[dict] = []
        self.metadata = ""
        self.segments: list[dict] = []
        self.fail_snapshot = False
        self.snapshots = 0
        self.allocations = 0  # torch's cumulative allocation count
        self.requested: tuple[int, int] | None = None
        self.events: list[dict] = []  # the recorder's history (``device_traces``)
        cuda = self

        class Memory:
            @staticmethod
            def _record_memory_history(
                enabled="all",
                context="all",
                stacks="all",
                max_entries=sys.maxsize,
                device=None,
                clear_history=False,
                compile_context=False,
                global_record_annotations=False,
                skip_actions=None,
            ):
                if not cuda.initialised:
                    raise AssertionError("would have initialised CUDA")
                cuda.calls.append({"enabled": enabled, "context": context, "stacks": stacks})
                cuda.recording = enabled is not None

            @staticmethod
            def memory_snapshot(mempool_id=None, include_traces=True):
                assert include_traces is False, "the trace ring buffer makes snapshots slow"
                if cuda.fail_snapshot:
                    raise RuntimeError("CUDA error: an illegal memory access\nmore detail")
                cuda.snapshots += 1
                return list(cuda.segments)

            @staticmethod
            def memory_stats_as_nested_dict(device=None):
                stats = {"allocation": {"all": {"allocated": cuda.allocations}}}
                if cuda.requested is not None:  # what live allocations asked for: (now, peak)
                    now, peak = cuda.requested
                    stats["requested_bytes"] = {"all": {"current": now, "peak": peak}}
                return stats

            @staticmethod
            def _snapshot():
                return {"segments": list(cuda.segments), "device_traces": [list(cuda.events)]}

            @staticmethod
            def _set_memory_metadata(text):
                cuda.metadata = text

            @staticmethod
            def _get_memory_metadata():
                return cuda.metadata

        self.memory = Memory

    def is_initialized(self) -> bool:
        return self.initialised

    def device_count(self) -> int:
        return 1


@pytest.fixture
def fake_torch(monkeypatch):
    torch = ModuleType("torch")
    torch.__version__ = "2.13.0"
    torch.cuda = FakeCuda(initialised=False)
    torch._C = SimpleNamespace(_cuda_isHistoryEnabled=lambda: torch.cuda.recording)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def test_trace_on_before_cuda_arms_and_starts_with_the_first_cell_after(fake_torch, compiler):
    shell = SimpleNamespace(compile=compiler)
    tracer = AllocationTracer(shell)
    message = tracing_line(tracer.start())
    assert "armed" in message and "\n" not in message
    assert (tracer.armed, tracer.active, fake_torch.cuda.calls) == (True, False, [])

    compiler.cache("x = torch.empty(2**20, device='cuda')  # inits CUDA\n", 1)
    tracer.cell_started(1)
    fake_torch.cuda.initialised = True
    fake_torch.cuda.segments = snapshot(block(0x1000, MIB, []))["segments"]
    assert tracer.cell_finished(1) == []  # not traced: CUDA came up during this cell
    assert tracer.active
    assert fake_torch.cuda.calls == [{"enabled": "all", "context": "alloc", "stacks": "python"}]

    cell = compiler.cache("y = torch.empty(2**20, device='cuda')\n", 2)
    tracer.cell_started(2)
    assert fake_torch.cuda.metadata == "nbgpumon In[2]"
    fake_torch.cuda.allocations += 1
    fake_torch.cuda.segments = snapshot(
        block(0x1000, MIB, []), block(0x2000, MIB, [frame(cell, 1)])
    )["segments"]
    found = tracer.cell_finished(2)
    assert [format_traced(a) for a in found] == [
        "[2] line 1: y = torch.empty(2**20, device='cuda') — 1.0 MiB"
    ]
    assert fake_torch.cuda.metadata == ""

    assert tracing_line(tracer.stop()) == "allocation tracing off"
    assert fake_torch.cuda.calls[-1]["enabled"] is None and not tracer.active


def test_tracings_state_is_a_fact_that_the_views_word_as_on_armed_or_off(fake_torch, compiler):
    control = TracingControl(GPUMon(), lambda: SimpleNamespace(compile=compiler), None)
    assert control.state == TracingState(OFF)
    assert tracing_line(control.trace(False)) == "allocation tracing was not on"
    assert control.trace(True) == TracingAnswer(WAITING, "torch")  # CUDA not up yet
    assert tracing_state_words(control.state) == "armed"
    fake_torch.cuda.initialised = True
    control.cell_started(1)  # the first cell after CUDA came up starts the recorder
    assert control.state == TracingState(ON)
    assert tracing_line(control.trace(True)) == "allocation tracing is already on"
    fake_torch.cuda.recording = False  # turned off outside nbgpumon
    control.cell_started(2)
    assert tracing_state_words(control.state) == (
        "off (torch's memory recorder was turned off outside nbgpumon)"
    )


def test_trace_on_with_cuda_up_records_at_once(fake_torch):
    fake_torch.cuda.initialised = True
    tracer = AllocationTracer(SimpleNamespace(compile=CachingCompiler()))
    assert tracing_line(tracer.start()).startswith("allocation tracing on")
    assert tracer.active and fake_torch.cuda.recording


def test_a_recorder_the_user_started_is_used_and_left_on(fake_torch):
    fake_torch.cuda.initialised = True
    fake_torch.cuda.recording = True
    tracer = AllocationTracer(SimpleNamespace(compile=CachingCompiler()))
    assert tracing_line(tracer.start()) == (
        "allocation tracing on: after each cell, the memory it left behind is shown by cell and "
        "line (torch's recorder was already on; using it)"
    )
    assert fake_torch.cuda.calls == []
    assert tracing_line(tracer.stop()) == (
        "allocation tracing off (torch's recorder was on before; left on)"
    )
    assert fake_torch.cuda.recording


def test_a_recorder_turned_off_behind_the_tracers_back_ends_tracing(fake_torch):
    fake_torch.cuda.initialised = True
    tracer = AllocationTracer(SimpleNamespace(compile=CachingCompiler()))
    tracer.start()
    fake_torch.cuda.recording = False  # the user called _record_memory_history(None)
    tracer.cell_started(2)
    assert tracer.cell_finished(2) == []
    assert (tracer.armed, tracer.active) == (False, False)
    assert tracer.error == "torch's memory recorder was turned off outside nbgpumon"
    assert len(fake_torch.cuda.calls) == 1  # not turned back on


def test_torch_without_the_string_api_is_too_old(fake_torch):
    fake_torch.cuda.initialised = True
    fake_torch.__version__ = "2.0.1"

    def legacy(enabled, record_context=True, trace_alloc_max_entries=1, device=None):
        raise AssertionError("must not be called")

    fake_torch.cuda.memory._record_memory_history = staticmethod(legacy)
    tracer = AllocationTracer(SimpleNamespace(compile=CachingCompiler()))
    message = tracing_line(tracer.start())
    assert message == (
        "allocation tracing not possible: torch 2.0.1 is too old for allocation tracing "
        "(needs 2.1 or later)"
    )
    assert not tracer.armed and not tracer.active


def test_snapshots_are_skipped_when_torch_counted_no_allocation(fake_torch, compiler):
    fake_torch.cuda.initialised = True
    tracer = AllocationTracer(SimpleNamespace(compile=compiler))
    tracer.start()
    first = compiler.cache("a = torch.ones(1, device='cuda')\n", 1)
    tracer.cell_started(1)
    fake_torch.cuda.allocations += 1
    fake_torch.cuda.segments = snapshot(block(0x1000, 512, [frame(first, 1)]))["segments"]
    assert len(tracer.cell_finished(1)) == 1
    assert fake_torch.cuda.snapshots == 2

    second = compiler.cache("b = torch.ones(1, device='cuda')\n", 2)
    tracer.cell_started(2)  # no allocation since cell 1 ended: no snapshot needed
    assert fake_torch.cuda.snapshots == 2
    fake_torch.cuda.allocations += 1
    fake_torch.cuda.segments = snapshot(
        block(0x1000, 512, [frame(first, 1)]), block(0x1200, 512, [frame(second, 1)])
    )["segments"]
    assert [a.cell for a in tracer.cell_finished(2)] == [2]

    fake_torch.cuda.allocations += 1  # something allocated between the cells
    fake_torch.cuda.segments = snapshot(
        block(0x1000, 512, [frame(first, 1)]),
        block(0x1200, 512, [frame(second, 1)]),
        block(0x1400, 512, []),
    )["segments"]
    tracer.cell_started(3)
    assert fake_torch.cuda.snapshots == 4
    assert tracer.cell_finished(3) == []  # the in-between block is not cell 3's
    assert fake_torch.cuda.snapshots == 4  # cell 3 allocated nothing: no snapshot at its end


def test_a_failing_snapshot_gives_no_result_and_one_line_of_error(fake_torch):
    fake_torch.cuda.initialised = True
    tracer = AllocationTracer(SimpleNamespace(compile=CachingCompiler()))
    tracer.start()
    tracer.cell_started(3)
    fake_torch.cuda.allocations += 1
    fake_torch.cuda.fail_snapshot = True
    assert tracer.cell_finished(3) == []
    assert tracer.error == (
        "allocation tracing failed at cell end: RuntimeError: CUDA error: an illegal memory access"
    )


def test_a_cells_peak_is_replayed_in_what_each_allocation_asked_for(fake_torch, compiler):
    """torch's history gives each allocation's asked-for size; its allocated figure counts the
    blocks that served them, rounded up. The replay runs on torch's requested_bytes: on the
    allocated figures it never meets the peak (what an H100 showed for a training step). Its
    lines under 1 MiB are not shown, as for what a cell kept."""
    fake_torch.cuda.initialised = True
    control = TracingControl(GPUMon(), lambda: SimpleNamespace(compile=compiler), None)
    assert tracing_line(control.trace(True)).startswith("allocation tracing on")
    model = compiler.cache("w = torch.empty(2**22, dtype=torch.uint8, device='cuda')\n", 2)
    step = compiler.cache("h = w.float() * 2\nloss = h.sum()\ndel h\n", 3)
    asked = 3_000_000  # served by a 3 MiB block
    fake_torch.cuda.events = [
        {"action": "alloc", "addr": 0x1000, "size": 4 * MIB, "frames": [frame(model, 1)]},
        {"action": "alloc", "addr": 0x9000000, "size": asked, "frames": [frame(step, 1)]},
        {"action": "alloc", "addr": 0xA000000, "size": 4, "frames": [frame(step, 2)]},
        {"action": "alloc", "addr": 0xB000000, "size": 4, "frames": [frame(step, 2)]},
        {"action": "free_requested", "addr": 0x9000000, "size": asked, "frames": []},
        {"action": "free_completed", "addr": 0x9000000, "size": asked, "frames": []},
        {"action": "free_requested", "addr": 0xB000000, "size": 4, "frames": []},  # (4 B: unshown)
    ]
    fake_torch.cuda.requested = (4 * MIB + 4, 4 * MIB + asked + 8)
    after, peak = 4 * MIB + 512, 7 * MIB + 1024  # the blocks' sizes, as memory_allocated()

    (replay,) = control.peak_replays(torch_record(after, after, peak, index=2))  # In[3]
    assert replay.cut is None
    assert [format_traced(a) for a in replay.found] == ["[3] line 1: h = w.float() * 2 — 2.9 MiB"]
    assert replay.bytes == asked

    history = {"device_traces": [fake_torch.cuda.events]}
    asked_for = replay_to_peak(history, 0, *fake_torch.cuda.requested, compiler._filename_map, 3)
    assert [a.bytes for a in asked_for.found] == [asked, 4]  # the 4 B line is left unshown
    by_blocks = replay_to_peak(history, 0, after, peak, compiler._filename_map, 3)
    assert by_blocks.found == () and by_blocks.cut == ReplayCut(0, len(fake_torch.cuda.events))


def test_trace_on_without_torch_neither_imports_torch_nor_raises():
    script = textwrap.dedent(
        """
        import sys
        from types import SimpleNamespace
        from nbgpumon._forensics.tracing import AllocationTracer
        from nbgpumon._views.words.traced import tracing_line
        tracer = AllocationTracer(SimpleNamespace(compile=None))
        print(tracing_line(tracer.start()))
        tracer.cell_started(1)
        print(tracer.cell_finished(1), tracer.armed, tracer.active, repr(tracer.error))
        print(tracing_line(tracer.stop()))
        print("torch" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0].startswith("allocation tracing armed: it starts at the first cell after torch")
    assert out[1:] == ["[] True False ''", "allocation tracing off", "False"]
