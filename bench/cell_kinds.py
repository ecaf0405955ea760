"""What reading a cell's memory by kind adds to its end, for a model of 1,000 parameter
tensors trained with AdamW (issue 31; target <= 5 ms a cell).

What a cell's end runs for it: ``LeakWatch.changes()`` (the names it bound, the outputs it
added) and ``CellKinds.read()``, timed for five kinds of cell, run in turn: one that moves
nothing and binds nothing (the figures carried over); one that binds a name and allocates
nothing (``lr = 0.1``: only what it bound looked at, then carried over); one that binds a new
tensor (``x = torch.ones(8)``: the known holders and that name walked); a training step
(zero_grad, forward, backward, step, binding ``loss``: new gradients, read again; the rest as
it was read); and the same step with its gradients zeroed in place
(``zero_grad(set_to_none=False)``: the same tensors, so what re-reading new gradients costs is
told apart from what reading after a step costs). Beside them, one whole holder walk of the
same namespace, which a read runs only when unexplained memory grows. Then the tensor-binding
cell over ``--cells`` cells whose history (``_iN``, ``Out``) grows as a kernel's does: the
first and the last 500.

On a GPU the model is on cuda:0 and the figures are torch's; without one it is on the host and
the walk looks for host memory (the same walk; the allocated figure is what the whole walk
finds), so the number says what the walk costs here.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from types import SimpleNamespace
from typing import Any

import result_file
import stats

TARGET_MS = 5.0
LAYERS = 500  # Linear layers: a weight and a bias each, 1,000 parameter tensors
WARM_UP = 20  # rounds of the four kinds of cell run before the timed ones


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=200, help="cells of each kind timed")
    parser.add_argument("--cells", type=int, default=10_000, help="cells of growing history")


def _shell(ns: dict[str, Any]) -> SimpleNamespace:
    ns.setdefault("Out", {})
    return SimpleNamespace(
        user_ns=ns,
        user_ns_hidden={"Out": ns["Out"]},
        displayhook=SimpleNamespace(_=None, __=None, ___=None),
        InteractiveTB=SimpleNamespace(tb=None),
        last_execution_result=None,
    )


def _record(n: int, before: int, after: int, peak: int, total: int) -> Any:
    from nbgpumon._ledger.records import AllocatorUsage, CellRecord, DeviceUsage

    usage = AllocatorUsage("torch", before, after, before, after, peak, True, total)
    device = DeviceUsage(
        0, 0, "bench", before, after, before, after, None, None, peak, True, total, None, None,
        (usage,),
    )  # fmt: skip
    return CellRecord(
        n, "cell", n, None, "", 0.0, 0.0, "ok", "", (device,), None, None, None, False
    )


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("cell_kinds", args)
    if importlib.util.find_spec("torch") is None:
        result.skip("all", "torch is not installed")
        result.finish()
        return
    import torch

    from nbgpumon._forensics import holder_scan
    from nbgpumon._forensics.cell_kinds import CellKinds
    from nbgpumon._forensics.leaks import LeakWatch

    repeats = 10 if args.quick else args.repeats
    cells = 600 if args.quick else args.cells
    gpu = torch.cuda.is_available()
    device = "cuda:0" if gpu else "cpu"
    model = torch.nn.Sequential(*(torch.nn.Linear(32, 32) for _ in range(LAYERS))).to(device)
    opt = torch.optim.AdamW(model.parameters())
    batch = torch.randn(64, 32, device=device)
    ns: dict[str, Any] = {"model": model, "opt": opt, "batch": batch}
    shell = _shell(ns)
    walk = "cuda" if gpu else "host"
    kinds = CellKinds(shell, walk)
    leaks = LeakWatch(shell)

    def allocated() -> int:
        if gpu:
            torch.cuda.synchronize()
            return torch.cuda.memory_allocated()
        return holder_scan.scan(shell, "host", 1.0).total  # (what there is to count here)

    def handed_out() -> int:  # (torch's count of the bytes it has handed out, as the ledger's)
        return int(torch.cuda.memory_stats(0)["allocated_bytes.all.allocated"]) if gpu else 0

    def step(set_to_none: bool = True) -> None:  # (binds ``loss``, as a training cell does)
        opt.zero_grad(set_to_none=set_to_none)
        ns["loss"] = loss = model(batch).sum()
        loss.backward()
        opt.step()

    step()
    figures = {"allocated": allocated()}
    n = 0

    def cell(body: Any, moved: int = 0) -> float:
        """One cell: its body untimed, then what its end adds for the kinds, in ms. On the
        host, a cell that ``moved`` the figure allocated too (a block's 512 B)."""
        nonlocal n
        n += 1
        before, out = figures["allocated"], handed_out()
        leaks.cell_started()
        body()
        after = before + moved if not gpu else allocated()
        total = handed_out() - out if gpu else (512 if moved else 0)
        figures["allocated"] = after
        record = _record(n, before, after, after, total)
        started = time.perf_counter()
        kinds.read(record, leaks.changes)
        return (time.perf_counter() - started) * 1000

    def bind() -> None:
        ns["lr"] = 0.1 * n  # (a new float each time: bound again)

    def bind_tensor() -> None:
        ns["x"] = torch.ones(8, device=device)  # (a new one each time: the old one freed)

    first = cell(lambda: None)  # the first read: the known holders learned (a whole walk)
    # (body, whether it moves the allocated figure: on the host nothing moves the walk's
    # figure, so a step's end is told apart as a GPU's is, by it moving a block's 512 B)
    kinds_of_cell = {
        "quiet": (lambda: None, False),
        "binds a name": (bind, False),
        "binds a tensor": (bind_tensor, True),
        "training step": (step, True),
        "training step, gradients zeroed in place": (lambda: step(set_to_none=False), True),
    }
    timings: dict[str, list[float]] = {name: [] for name in kinds_of_cell}
    # the kinds in turn, after a warm-up: a drift in the host's speed (seen on the GPU
    # machines' hosts: the same cell 5.7 ms early in a run, 3.3 ms later) falls on each alike
    for i in range(WARM_UP + repeats):
        for name, (body, moves) in kinds_of_cell.items():
            ms = cell(body, moved=512 * (i % 2 * 2 - 1) if moves else 0)
            if i >= WARM_UP:
                timings[name].append(ms)
    whole = []
    for _ in range(max(10, repeats // 10)):
        started = time.perf_counter()
        holder_scan.scan(shell, walk, 1.0)
        whole.append((time.perf_counter() - started) * 1000)
    history = []
    for i in range(cells):  # IPython's history grows as cells run: _iN, and an output now and then
        ns[f"_i{n + 1}"] = "x = torch.ones(8, device=device)"
        if i % 10 == 0:
            ns["Out"][n + 1] = i
        history.append(cell(bind_tensor, moved=512 * (i % 2 * 2 - 1)))
    read = kinds.narrow_walks, kinds.whole_walks
    tensors = 2 * LAYERS
    where = f"{'cuda:0' if gpu else 'host'}, {tensors} parameter tensors, AdamW"
    for name, ms in timings.items():
        result.add(f"cell kinds, {name} ({where}), median", stats.median(ms), "ms", TARGET_MS)
        result.add(f"cell kinds, {name}, p95", stats.percentile(ms, 95), "ms", TARGET_MS)
    result.add(f"whole holder walk ({where}), median", stats.median(whole), "ms")
    window = min(500, cells // 2)
    result.add(
        f"cell kinds, binds a tensor, first {window} of {cells} cells, median",
        stats.median(history[:window]),
        "ms",
        TARGET_MS,
    )
    result.add(
        f"cell kinds, binds a tensor, last {window} of {cells} cells, median",
        stats.median(history[-window:]),
        "ms",
        TARGET_MS,
    )
    result.details.update(
        first_read_ms=first, narrow_walks=read[0], whole_walks=read[1], device=device
    )
    for name, ms in timings.items():
        print(
            f"{name:>40}: median {stats.median(ms):.2f} ms, p95 {stats.percentile(ms, 95):.2f} ms"
        )
    print(f"    whole walk: median {stats.median(whole):.2f} ms")
    print(
        f"history: first {window} {stats.median(history[:window]):.2f} ms, last {window} "
        f"{stats.median(history[-window:]):.2f} ms; walks {read[0]} narrow, {read[1]} whole"
    )
    result.finish()


if __name__ == "__main__":
    main()
