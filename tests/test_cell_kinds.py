"""Each cell's memory by kind at its end, read from what the last read learned: real torch
objects on the host (the walk is the same for CUDA, by place), figures held to the byte against
the unique storages torch reports, and the narrow and whole walks counted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from nbgpumon._forensics.cell_kinds import CARRIED, UNTOUCHED, WALK_AGAIN, CellKinds
from nbgpumon._forensics.explain import UNEXPLAINED, explain_cell
from nbgpumon._forensics.leaks import LeakWatch
from nbgpumon._ledger.kinds_notes import KindsReadFailed, ScanCut, ScanFoundMore
from nbgpumon._ledger.records import (
    TRANSIENT,
    AllocatorUsage,
    CellRecord,
    DeviceUsage,
    Retention,
    record_from_dict,
)
from nbgpumon._views.frames import frame_row
from nbgpumon._views.memory.explain import cell_explain_lines, kinds_note_words

from fake_shell import shell_with, storage_bytes

MIB = 2**20


def torch_record(
    before: int, after: int, peak: int, index: int = 0, total: int | None = None
) -> CellRecord:
    """A cell's record whose one device's torch figures are ``before``/``after``/``peak``, and
    ``total``: what torch handed out during it (None: unknown)."""
    usage = AllocatorUsage("torch", before, after, before, after, peak, True, total)
    device = DeviceUsage(
        0, 0, "test", before, after, before, after, None, None, peak, True, total, None, None,
        (usage,),
    )  # fmt: skip
    return CellRecord(
        index, "cell", index + 1, None, "", 0.0, 1.0, "ok", "", (device,), None, None, None, False
    )


class _Cells:
    """Cells run against one shell: each cell's allocated figure is what its variables hold
    plus ``outside`` (memory in use that no variable reaches)."""

    def __init__(self, shell, torch) -> None:
        self.shell, self.torch = shell, torch
        self.kinds = CellKinds(shell, device="host")
        self.allocated = 0
        self.outside = 0
        self.n = 0

    def held(self) -> int:
        ns = self.shell.user_ns
        tensors = []
        for value in ns.values():
            if isinstance(value, self.torch.nn.Module):
                tensors += list(value.parameters()) + list(value.buffers())
                tensors += [p.grad for p in value.parameters() if p.grad is not None]
            elif isinstance(value, self.torch.optim.Optimizer):
                tensors += [
                    t for s in value.state.values() for t in s.values() if self.torch.is_tensor(t)
                ]
            elif isinstance(value, self.torch.Tensor):
                tensors.append(value)
            elif isinstance(value, list):
                tensors += [t for t in value if isinstance(t, self.torch.Tensor)]
        return storage_bytes(tensors) + self.outside

    def run(self, changed: set[str], transient: int = 0, total: int | None = None) -> CellRecord:
        after = self.held()
        record = torch_record(self.allocated, after, after + transient, self.n, total)
        self.allocated, self.n = after, self.n + 1
        return self.kinds.read(record, lambda: (changed, set()))


def test_a_training_run_is_told_apart_by_kind_cell_by_cell():
    torch = pytest.importorskip("torch")
    shell = shell_with()
    cells = _Cells(shell, torch)

    model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(8)))
    opt = torch.optim.AdamW(model.parameters())
    shell.user_ns.update(model=model, opt=opt)
    built = cells.run({"model", "opt"}).devices[0]
    params = storage_bytes(model.parameters())
    assert dict(built.kinds_after) == {"parameters": params}
    assert built.kinds_before == ()  # nothing read before the first cell

    model(torch.randn(16, 64)).sum().backward()
    opt.step()
    cells.outside = MIB  # e.g. a library's workspace: in use, reached by nothing
    step = cells.run(set(), transient=10 * MIB).devices[0]  # (binds no name)
    state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    grads = storage_bytes(p.grad for p in model.parameters())
    assert dict(step.kinds_after) == {
        "parameters": params,
        "gradients": grads,
        "optimizer state": storage_bytes(state),
        UNEXPLAINED: MIB,
    }
    assert sum(size for _, size in step.kinds_after) == step.allocated_after
    assert step.kept_by_kind == {
        "gradients": grads,
        "optimizer state": storage_bytes(state),
        UNEXPLAINED: MIB,
    }
    split = step.peak_by_kind
    assert split[TRANSIENT] == 10 * MIB and sum(split.values()) == step.peak_allocated
    assert cells.kinds.whole_walks == 0  # the names bound and the known holders were enough

    walks = cells.kinds.narrow_walks
    quiet = cells.run(set()).devices[0]  # a cell that moved nothing and bound nothing
    assert quiet.kinds_after == step.kinds_after and quiet.kinds_note == (CARRIED,)
    assert cells.kinds.narrow_walks == walks  # no walk at all
    assert quiet.kept_by_kind == {}


def _walked(cells) -> int:
    """The walks the cells' reads made: narrow ones, and those of a cell's new names alone."""
    return cells.kinds.narrow_walks + cells.kinds.new_name_walks


def test_a_cell_that_allocated_nothing_and_bound_no_memory_is_carried_over_without_a_walk():
    """``lr = 0.1`` after a model is built: torch handed out nothing during the cell and the
    name it bound reaches no memory of the device, so no storage can have changed hands. A
    name bound to memory that was there already, a known holder bound again, a cell that
    failed, or a figure torch did not give: each is walked."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(64, 64)
    shell = shell_with(model=model, x=torch.ones(MIB // 4))
    cells = _Cells(shell, torch)
    built = cells.run({"model", "x"}).devices[0]
    walks = _walked(cells)

    shell.user_ns["lr"] = 0.1
    lr = cells.run({"lr"}, total=0).devices[0]
    assert (lr.kinds_after, lr.kinds_note) == (built.kinds_after, (UNTOUCHED,))
    assert _walked(cells) == walks  # not walked
    assert lr.kept_by_kind == {}

    shell.user_ns["w"] = model.weight  # memory there already, held by a new name
    assert cells.run({"w"}, total=0).devices[0].kinds_note != (UNTOUCHED,)
    assert _walked(cells) == walks + 1
    shell.user_ns["y"] = shell.user_ns["x"]
    cells.run({"y"}, total=0)
    shell.user_ns["x"] = 1  # a known holder bound again (its tensor still held, by y)
    assert cells.run({"x"}, total=0).devices[0].kinds_note != (UNTOUCHED,)
    assert _walked(cells) == walks + 4  # (x's new value alone, which did not account; all)

    shell.user_ns["epochs"] = 3
    assert cells.run({"epochs"}, total=None).devices[0].kinds_note != (UNTOUCHED,)  # unknown
    assert _walked(cells) == walks + 5
    after = cells.held()
    failed = dataclasses.replace(torch_record(after, after, after, cells.n, 0), status="error")
    shell.user_ns["n"] = 4
    read = cells.kinds.read(failed, lambda: ({"n"}, set()))
    assert read.devices[0].kinds_note != (UNTOUCHED,) and _walked(cells) == walks + 6

    shell.user_ns["lr"] = 0.2
    assert cells.run({"lr"}, total=0).devices[0].kinds_note == (UNTOUCHED,)
    assert _walked(cells) == walks + 6
    shell.user_ns["Out"][9] = model.bias  # an output of memory there already
    shown = cells.kinds.read(torch_record(after, after, after, cells.n, 0), lambda: (set(), {9}))
    assert shown.devices[0].kinds_note != (UNTOUCHED,) and _walked(cells) == walks + 7


def test_memory_that_the_known_holders_miss_sends_one_whole_walk():
    torch = pytest.importorskip("torch")
    bag: list = []
    shell = shell_with(bag=bag, model=torch.nn.Linear(32, 32))
    cells = _Cells(shell, torch)
    cells.run({"bag", "model"})  # bag holds nothing yet: not a known holder

    bag.append(torch.ones(WALK_AGAIN // 4 + MIB // 4))  # over WALK_AGAIN, no name bound
    grown = cells.run(set()).devices[0]
    assert dict(grown.kinds_after)["arrays held by variables (torch)"] == storage_bytes(bag)
    assert UNEXPLAINED not in dict(grown.kinds_after)
    assert cells.kinds.whole_walks == 1

    bag.append(torch.ones(MIB // 4))  # bag is known now: the narrow walk finds it
    again = cells.run(set()).devices[0]
    assert dict(again.kinds_after)["arrays held by variables (torch)"] == storage_bytes(bag)
    assert cells.kinds.whole_walks == 1
    assert again.kept_by_kind == {"arrays held by variables (torch)": MIB}


def test_the_leak_verdicts_whole_walk_is_used_as_it_is():
    torch = pytest.importorskip("torch")
    from nbgpumon._forensics import holder_scan

    shell = shell_with(x=torch.ones(MIB))
    cells = _Cells(shell, torch)
    whole = holder_scan.scan(shell, "host")
    after = cells.held()
    record = cells.kinds.read(torch_record(0, after, after), lambda: (set(), set()), whole=whole)
    assert dict(record.devices[0].kinds_after) == {"arrays held by variables (torch)": 4 * MIB}
    assert cells.kinds.narrow_walks == 0 and cells.kinds.whole_walks == 0


def test_a_cells_changes_are_its_names_and_its_outputs():
    torch = pytest.importorskip("torch")
    shell = shell_with(a=1, b=2)
    watch = LeakWatch(shell)
    watch.cell_started()
    ns = shell.user_ns
    ns["a"] = torch.ones(4)  # bound again
    del ns["b"]  # deleted
    ns["c"] = 3  # new
    ns["_i5"] = "c = 3"  # IPython's own: not a change of the user's
    ns["Out"][5] = ns["a"]
    assert watch.changes() == ({"a", "b", "c"}, {5})


def test_the_kinds_and_their_notes_survive_the_recordings_json():
    record = torch_record(0, 3 * MIB, 5 * MIB)
    notes = (
        ScanFoundMore("torch", MIB), ScanCut(0.05, 1200), CARRIED, KindsReadFailed("E: x")
    )  # fmt: skip
    device = dataclasses.replace(
        record.devices[0],
        kinds_before=(("parameters", MIB),),
        kinds_after=(("parameters", MIB), ("gradients", 2 * MIB)),
        kinds_note=notes,
    )
    held = Retention("cuda", (("x", MIB),), ScanCut(0.05, 9))
    record = dataclasses.replace(record, devices=(device,), retention=held)
    as_json = json.loads(json.dumps(dataclasses.asdict(record)))
    assert record_from_dict(as_json) == record
    older = dataclasses.asdict(torch_record(0, MIB, MIB))  # a schema 5 file's device: no kinds
    for d in older["devices"]:
        del d["kinds_before"], d["kinds_after"], d["kinds_note"]
    assert record_from_dict(older).devices[0].kinds_after == ()


def test_a_schema_6_files_notes_load_as_their_text_and_show_as_it_is():
    said = "the scan stopped after 50 ms (9 objects looked at): some holders may be missing"
    as_json = dataclasses.asdict(torch_record(0, 3 * MIB, 5 * MIB))
    as_json["devices"][0].update(
        kinds_before=[["parameters", MIB]], kinds_after=[["parameters", 3 * MIB]],
        kinds_note=f"carried over: the cell moved no allocator and bound no name; {said}",
    )  # fmt: skip
    as_json["retention"] = {"device": "cuda", "holders": [["x", MIB]], "note": said[9:]}
    record = record_from_dict(as_json)
    assert record.devices[0].kinds_note == (as_json["devices"][0]["kinds_note"],)
    assert record.retention is not None and record.retention.note == said[9:]
    (explained,) = explain_cell(record)
    assert cell_explain_lines([explained])[-1] == f"  ({as_json['devices'][0]['kinds_note']})"
    empty = dataclasses.asdict(torch_record(0, MIB, MIB))
    empty["devices"][0]["kinds_note"] = ""
    empty["retention"] = {"device": "cuda", "holders": [], "note": ""}
    back = record_from_dict(empty)
    assert back.devices[0].kinds_note == () and back.retention.note is None  # type: ignore[union-attr]


def test_a_cells_notes_are_worded_as_one_line_under_its_breakdown():
    record = torch_record(0, 3 * MIB, 5 * MIB)
    device = dataclasses.replace(
        record.devices[0],
        kinds_after=(("parameters", 3 * MIB),),
        kinds_note=(ScanFoundMore("torch", MIB), ScanCut(0.05, 1200)),
    )
    (explained,) = explain_cell(dataclasses.replace(record, devices=(device,)))
    assert cell_explain_lines([explained])[-2:] == [
        "  (the scan found 1.0 MiB more of torch's than it counts in use: read moments apart; "
        "the scan stopped after 50 ms (1,200 objects looked at): some holders may be missing)",
        "  (what it kept by kind is unknown: its start was not read by kind)",
    ]
    assert kinds_note_words((UNTOUCHED, KindsReadFailed("RuntimeError: boom"))) == (
        "carried over: the cell allocated nothing and bound no GPU memory; reading the cell's "
        "memory by kind failed: RuntimeError: boom"
    )
    assert frame_row(record)["gpu0.kinds_note"] == ""  # (cells_frame's column, in words)
    assert frame_row(dataclasses.replace(record, devices=(device,)))["gpu0.kinds_note"] == (
        kinds_note_words(device.kinds_note)
    )


def _same_addresses(tensors: list, data_ptrs: list, indices: list) -> bool:
    """torch's ``_C._tensors_data_ptrs_at_indices_equal`` (CUDA builds) as its C++ reads."""
    return all(tensors[i].data_ptr() == data_ptrs[i] for i in indices)


@pytest.mark.parametrize("c_comparison", [False, True], ids=["python", "torch's C comparison"])
def test_a_remembering_walk_finds_what_a_fresh_one_finds_as_the_tensors_change(
    monkeypatch, c_comparison
):
    """The memo's readings are reused only while their tensors stay put: after each change
    (new gradients, a parameter given new data, the optimizer's state reset, a shared storage
    counted by another holder first) a walk that remembers finds what a fresh walk finds. So
    it does where the addresses are compared in one C call (torch's CUDA builds; on a CPU
    build, the same comparison in Python stands for it, at the library's boundary)."""
    torch = pytest.importorskip("torch")
    from nbgpumon._forensics import holder_scan

    if c_comparison and not hasattr(torch._C, "_tensors_data_ptrs_at_indices_equal"):
        monkeypatch.setattr(
            torch._C, "_tensors_data_ptrs_at_indices_equal", _same_addresses, raising=False
        )

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters())
    shell = shell_with(model=model, opt=opt)
    memo = holder_scan.OwnMemo()

    def same() -> None:
        fresh = holder_scan.scan(shell, "host")
        remembered = holder_scan.scan(shell, "host", memo=memo)
        assert remembered.categories == fresh.categories
        assert remembered.holders == fresh.holders

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(torch.randn(4, 64)).sum().backward()
        opt.step()

    same()
    step()
    same()
    reused = memo.reused
    same()
    assert memo.reused > reused  # nothing moved: the readings were reused
    step()  # new gradients
    same()
    with torch.no_grad():
        model[0].weight.data = torch.zeros(64, 128)[:, :64]  # new data, a view of a bigger one
    same()
    opt.state.clear()
    same()
    shell.user_ns["a_view"] = model[1].weight[:4]  # a parameter's storage, held twice
    same()
    shared = torch.nn.Linear(8, 8)  # one layer twice, and an optimizer over part of the model
    shell.user_ns["model"] = torch.nn.Sequential(model, shared, torch.nn.ReLU(), shared)
    shell.user_ns["opt"] = torch.optim.SGD(shared.parameters())
    same()


def test_an_optimizer_over_a_models_parameters_reads_their_addresses_once_per_walk(monkeypatch):
    """``AdamW(model.parameters())``: the walk reads each parameter's address for the model,
    and the optimizer takes that reading (its own state is read apart)."""
    torch = pytest.importorskip("torch")
    from nbgpumon._forensics import holder_scan
    from nbgpumon._sources.frameworks.torch import holders

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(torch.nn.Linear(8, 2)))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 8)).sum().backward()
    opt.step()  # gradients, and a state of three tensors per parameter
    reads = []
    monkeypatch.setattr(holders, "_DATA_PTR", lambda t: reads.append(t) or t.data_ptr())
    memo = holder_scan.OwnMemo()
    scan = holder_scan.scan(shell_with(model=model, opt=opt), "host", memo=memo)
    assert len(reads) == 4 + 4 + 3 * 4  # parameters, gradients, state: none twice
    assert "opt (params)" in scan.reached


def test_the_widgets_rows_carry_each_cells_peak_by_kind_and_refuse_a_malformed_one():
    from nbgpumon._views.widget.live_chart import cell_row
    from nbgpumon._views.widget.traits import CELL

    record = torch_record(0, 3 * MIB, 5 * MIB)
    device = dataclasses.replace(record.devices[0], kinds_after=(("parameters", 3 * MIB),))
    row = cell_row(dataclasses.replace(record, devices=(device,)))
    assert row["kinds"] == [
        {"gpu": 0, "kind": "parameters", "bytes": 3 * MIB},
        {"gpu": 0, "kind": TRANSIENT, "bytes": 2 * MIB},
    ]
    assert row["kinds_text"] == "gpu0: parameters 3.0 MiB · activations and temporaries 2.0 MiB"
    CELL.check(row, "cells")  # (a well-formed row passes)
    with pytest.raises(Exception, match="gpu, kind, bytes"):
        CELL.check({**row, "kinds": [{"gpu": "0", "kind": "x", "bytes": 1}]}, "cells")


@pytest.mark.gpu
def test_on_a_gpu_torch_compares_a_models_addresses_in_one_call_and_the_readings_hold():
    """On a CUDA build the C comparison is there, and a remembering walk of a model and its
    optimizer on the GPU reuses its readings while nothing moves, finding what a fresh walk
    finds after a step."""
    torch = pytest.importorskip("torch")
    from gpu_required import needs_cuda

    needs_cuda()
    from nbgpumon._forensics import holder_scan
    from nbgpumon._sources.frameworks.torch import holders

    assert holders._addresses_equal() is not None
    model = torch.nn.Sequential(*[torch.nn.Linear(32, 32) for _ in range(50)]).cuda()
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 32, device="cuda")).sum().backward()
    opt.step()
    shell = shell_with(model=model, opt=opt)
    memo = holder_scan.OwnMemo()
    first = holder_scan.scan(shell, "cuda", memo=memo)
    reused = memo.reused
    again = holder_scan.scan(shell, "cuda", memo=memo)
    assert memo.reused > reused and again.categories == first.categories
    opt.zero_grad(set_to_none=True)
    model(torch.randn(4, 32, device="cuda")).sum().backward()  # new gradients
    assert holder_scan.scan(shell, "cuda", memo=memo).categories == (
        holder_scan.scan(shell, "cuda").categories
    )


def test_a_cell_whose_new_names_hold_all_it_allocated_walks_them_alone_and_agrees():
    """``t = torch.ones(n)`` beside a model and its optimizer: the cell freed nothing and its
    new name holds all it allocated, so the kinds at its end are those at its start and ``t``'s,
    from a walk of ``t`` alone (issue 43: not the model's thousands of tensors). Each read
    agrees with a fresh read of everything; a cell that also grew a known holder, freed
    something, or bound a name to memory the last walk did not count is walked as before."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(*(torch.nn.Linear(32, 32) for _ in range(20)))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    shell = shell_with(model=model, opt=opt, keep=[torch.ones(8)])  # (a holder, so walked)
    cells = _Cells(shell, torch)
    cells.run({"model", "opt", "keep"})

    def agrees(record: CellRecord) -> None:
        fresh = CellKinds(shell, device="host").read(record, lambda: (set(shell.user_ns), set()))
        assert record.devices[0].kinds_after == fresh.devices[0].kinds_after

    def run(changed: set[str], grew: int, freed: int = 0) -> CellRecord:
        return cells.run(changed, total=grew + freed)

    narrow, arrays = cells.kinds.narrow_walks, "arrays held by variables (torch)"
    held = dict(
        cells.kinds.read(torch_record(*[cells.held()] * 3, 99, 0), lambda: (set(), set()))
        .devices[0]
        .kinds_after
    )
    shell.user_ns["t"] = torch.ones(4096)
    first = run({"t"}, grew=4096 * 4)
    assert (cells.kinds.narrow_walks, cells.kinds.new_name_walks) == (narrow, 1)
    assert dict(first.devices[0].kinds_after)[arrays] == held[arrays] + 4096 * 4
    agrees(first)
    shell.user_ns["u"] = torch.ones(128)
    agrees(run({"u"}, grew=128 * 4))
    assert cells.kinds.narrow_walks == narrow  # (again only the new name)

    shell.user_ns["v"] = torch.ones(64)  # ... and the cell grew a known holder too:
    shell.user_ns["keep"].append(torch.ones(256))  # the new name's storage is not all it added
    agrees(run({"v"}, grew=64 * 4 + 256 * 4))
    assert cells.kinds.narrow_walks == narrow + 1
    shell.user_ns["w"] = torch.ones(512)
    del shell.user_ns["u"]  # it freed u's tensor, a holder of one storage: w's walk and u's
    agrees(run({"w", "u"}, grew=512 * 4 - 128 * 4, freed=128 * 4))  # storage told it all
    assert cells.kinds.narrow_walks == narrow + 1


def test_a_cell_that_binds_a_small_holder_again_is_read_by_its_old_and_new_storages():
    """``t = torch.ones(n)`` again and again beside a model and its optimizer: each cell frees
    the old ``t`` and allocates the new, so the kinds at its end are those at its start less the
    old storage plus the new one, from a walk of ``t`` alone (issue 43). Each read agrees with a
    fresh read of everything. Where that does not account for what the allocator handed out and
    took back (temporaries, the old value alive under another name, a model bound again), the
    cell is walked as before."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(*(torch.nn.Linear(32, 32) for _ in range(20)))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    shell = shell_with(model=model, opt=opt, t=torch.ones(1024))
    cells = _Cells(shell, torch)
    cells.run({"model", "opt", "t"})
    ns = shell.user_ns

    def agrees(record: CellRecord) -> None:
        fresh = CellKinds(shell, device="host").read(record, lambda: (set(ns), set()))
        assert record.devices[0].kinds_after == fresh.devices[0].kinds_after

    def run(changed: set[str], handed: int) -> CellRecord:
        return cells.run(changed, total=handed)

    narrow, new = cells.kinds.narrow_walks, cells.kinds.new_name_walks
    for size in (1024, 1024, 2048, 128):  # (4, 4, 8 and 0.5 KiB: whole 512-byte blocks)
        ns["t"] = torch.ones(size)
        agrees(run({"t"}, handed=size * 4))
    assert (cells.kinds.narrow_walks, cells.kinds.new_name_walks) == (narrow, new + 4)

    ns["u"] = ns["t"]  # the old value lives on under u: nothing was freed, so walked
    agrees(run({"u"}, handed=0))
    ns["t"] = torch.ones(256)
    agrees(run({"t"}, handed=256 * 4))
    assert cells.kinds.narrow_walks == narrow + 1

    ns["t"] = torch.ones(256)  # with temporaries: it handed out more than t holds
    agrees(run({"t"}, handed=256 * 4 + 4096))
    assert cells.kinds.narrow_walks == narrow + 2
    ns["t"], ns["u"] = ns["u"], ns["t"]  # two holders swapped: nothing handed out or freed
    agrees(run({"t", "u"}, handed=0))
    assert cells.kinds.narrow_walks == narrow + 2
    del ns["t"]  # deleted: its storage freed
    agrees(run({"t"}, handed=0))
    assert cells.kinds.narrow_walks == narrow + 2
    ns["model"] = torch.nn.Linear(32, 32)  # a container bound again: walked
    agrees(run({"model"}, handed=storage_bytes(ns["model"].parameters())))
    assert cells.kinds.narrow_walks == narrow + 3
