"""A toy framework plug-in's forensics parts are found by the layers above with no code outside
the plug-in: its arrays and containers by the holder scan, its out-of-memory errors by the
post-mortem (bytes, device, fixes, label), and no recorder, NVTX or profiler it lacks."""

from __future__ import annotations

import re
import sys
import types

import pytest

from nbgpumon._forensics import holder_scan
from nbgpumon._forensics.postmortem import OomFacts, failing_framework, parse_message
from nbgpumon._forensics.tracing import recorder
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._sources.frameworks import plugin
from nbgpumon._sources.frameworks.holder_walk import HolderKinds
from nbgpumon._sources.frameworks.out_of_memory import OutOfMemory
from nbgpumon._views.memory.oom import fixes, report

from fake_shell import by_name, shell_with

MIB = 2**20


class Buffer:
    """A toy array: one allocation on a toy device."""

    def __init__(self, address: int, size: int, device: int = 0) -> None:
        self.address, self.size, self.device = address, size, device


class Bag:
    """A toy container: it holds buffers in its own way (not in its __dict__)."""

    __slots__ = ("_inside",)

    def __init__(self, *buffers: Buffer) -> None:
        self._inside = list(buffers)


def toy_kinds(device: str) -> HolderKinds | None:
    toy = sys.modules.get("toyfw")
    if toy is None:
        return None

    def count(walk, holder, b):
        if walk.wants("cuda", b.device):
            walk.credit(holder, ((f"cuda:{b.device}", b.address), b.size))

    def open_bag(walk, holder, bag, follow):
        for b in bag._inside:
            follow(b)

    return HolderKinds(
        arrays=(toy.Buffer,), count=count, containers=(toy.Bag,), open=open_bag, first=(toy.Bag,)
    )


TOY = plugin.Framework(
    name="toyfw",
    label="ToyFW",
    module="toyfw",
    new_allocator=lambda devices: None,  # type: ignore[arg-type,return-value]
    holder_kinds=toy_kinds,
    oom=OutOfMemory(
        requested=(re.compile(r"wanted ([\d,]+) bytes"),),
        device=(re.compile(r"on toy device (\d+)"),),
        wording="TOY_EXHAUSTED",
        idle_fix="ToyFW's pool keeps {size}{other}: toyfw.trim()",
        general_fix="fewer toys",
    ),
)


@pytest.fixture
def toy(monkeypatch):
    """The toy plug-in registered (after the built-ins) and its framework imported."""
    monkeypatch.setitem(plugin._plugins, TOY.name, TOY)
    module = types.ModuleType("toyfw")
    module.Buffer, module.Bag = Buffer, Bag
    monkeypatch.setitem(sys.modules, "toyfw", module)
    return module


def test_the_holder_scan_walks_a_plug_ins_arrays_and_containers(toy):
    shared = Buffer(0x1000, 4 * MIB)
    shell = shell_with(
        loose=[shared, Buffer(0x9000, MIB, device=1)], bag=Bag(shared, Buffer(0x5000, 2 * MIB))
    )
    found = holder_scan.scan(shell, "cuda")
    # the bag is walked first (the plug-in says so), so the shared buffer is the bag's
    assert by_name(found) == {"bag": 6 * MIB, "loose": MIB}
    assert by_name(holder_scan.scan(shell, "cuda:1")) == {"loose": MIB}
    assert holder_scan.holds_memory({"k": Bag(Buffer(0x7000, 1))})


def test_without_the_framework_imported_its_arrays_are_not_looked_for(toy, monkeypatch):
    monkeypatch.delitem(sys.modules, "toyfw")
    assert holder_scan.scan(shell_with(x=Buffer(0x1000, MIB)), "cuda").holders == ()


def test_the_post_mortem_reads_a_plug_ins_messages_fixes_and_label(toy):
    error = type("Exhausted", (RuntimeError,), {"__module__": "toyfw.core"})(
        "wanted 3,145,728 bytes on toy device 2"
    )
    assert failing_framework(error) == "toyfw"
    assert failing_framework(RuntimeError("TOY_EXHAUSTED: no room")) == "toyfw"
    assert parse_message(str(error)) == (3 * MIB, 2)
    idle = AllocatorStats(
        allocated=0, reserved=2 * 2**30, active=0, inactive_split=0,
        peak_allocated=0, allocated_total=0, alloc_retries=0, ooms=1,
    )  # fmt: skip
    facts = OomFacts("[3]", "", 3 * MIB, 2, "", None, None, {"toyfw": idle}, None, (), "toyfw")
    assert fixes(facts) == ["ToyFW's pool keeps 2.0 GiB: toyfw.trim()", "fewer toys"]
    text = report(facts)
    assert text.startswith("nbgpumon: out of GPU memory (ToyFW) in [3]: asked for 3.0 MiB")
    assert "  this kernel, ToyFW: 0 B in use, 2.0 GiB reserved" in text


def test_a_plug_in_without_a_recorder_is_not_asked_to_trace(toy):
    assert recorder() is plugin.framework("torch").memory_history  # the built-in that has one
