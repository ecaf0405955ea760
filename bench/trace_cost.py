"""Cost of allocation tracing (``%gpumon trace on``): per allocation, and per cell.

Part 1 times ``torch.empty`` + free of a small (512 B) and a 1 MiB tensor in a loop, called
from a stack as deep as a notebook cell's, with torch's recorder off, on as nbgpumon turns it
on (history of 100 000 events, Python stacks), and on with no history (live blocks' stacks
only). Rounds alternate between the modes, so drift lands on all of them alike.

Part 2 times the tracer's per-cell work, ``cell_started`` + ``cell_finished``, with N live
blocks kept from earlier cells and a cell that allocates nothing (no snapshot needed) or keeps
one new block (one snapshot of all N), and with a cell that itself leaves N new blocks (all N
attributed). Nothing is allocated between cells, so ``cell_started`` reuses the set that the
last ``cell_finished`` saw. No target: tracing is opt-in, and the 1 ms per cell of
bench/hook_cost.py is for the hooks that always run.

For scale, it also times torch's full ``_snapshot()`` with the ring buffer full, which is what
reading the per-allocation metadata would cost.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import cuda_setup
import result_file
import stats

MODES = ("off", "on, 100000 events", "on, no history")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allocs", type=int, default=2000, help="allocations per timed run")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every mode")
    parser.add_argument("--depth", type=int, default=25, help="Python frames under the loop")
    parser.add_argument(
        "--blocks",
        type=int,
        nargs="+",
        default=[100, 1000, 10_000, 100_000],
        help="live block counts for the per-cell cost",
    )
    parser.add_argument("--cells", type=int, default=30, help="cells timed per block count")


def at_depth(depth: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` called ``depth`` frames deep, as under a kernel's cell: the recorder keeps, and
    a snapshot rebuilds, every Python frame of every allocation."""
    return fn() if depth <= 0 else at_depth(depth - 1, fn)


def alloc_loop(torch: Any, numel: int, n: int) -> Callable[[], float]:
    """A timed loop of ``n`` allocate-and-free; returns microseconds per pair."""

    def run() -> float:
        empty, uint8 = torch.empty, torch.uint8
        t0 = time.perf_counter_ns()
        for _ in range(n):
            t = empty(numel, dtype=uint8, device="cuda")
            del t
        return (time.perf_counter_ns() - t0) / 1e3 / n

    return run


def set_mode(mode: str, shell: Any) -> Any:
    """A tracer recording as ``mode`` says (stopped for "off")."""
    from nbgpumon._forensics.tracing import AllocationTracer

    max_entries = 0 if mode == "on, no history" else 100_000
    tracer = AllocationTracer(shell, max_entries=max_entries)
    if mode != "off":
        message = tracer.start()
        if not tracer.active:
            raise RuntimeError(message)
    return tracer


def time_allocations(result: result_file.Result, torch: Any, shell: Any, args: Any) -> None:
    sizes = {"512 B": 512, "1 MiB": 2**20}
    samples: dict[tuple[str, str], list[float]] = {(s, m): [] for s in sizes for m in MODES}
    for r in range(args.rounds):
        order = MODES if r % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            tracer = set_mode(mode, shell)
            for label, numel in sizes.items():
                loop = alloc_loop(torch, numel, args.allocs)
                at_depth(args.depth, loop)  # warm: the ring buffer and the cache
                gc.collect()
                samples[(label, mode)].append(at_depth(args.depth, loop))
            tracer.stop()
    details: dict[str, Any] = {}
    for label in sizes:
        off = samples[(label, "off")]
        details[label] = {m: stats.describe(samples[(label, m)]) for m in MODES}
        for mode in MODES[1:]:
            on = samples[(label, mode)]
            diffs = [b - a for a, b in zip(off, on, strict=True)]
            low, high = stats.bootstrap_ci(diffs)
            added = stats.median(diffs)
            result.log(
                f"{label} alloc+free: {stats.median(off):.2f} µs off, "
                f"{stats.median(on):.2f} µs {mode}"
            )
            result.add(
                f"recording adds per {label} alloc+free ({mode})",
                added,
                "µs",
                note=f"median {stats.median(on):.2f} µs on vs {stats.median(off):.2f} µs off, "
                f"{args.depth} frames deep; 95% CI {low:.2f}..{high:.2f} µs",
                ci=(low, high),
            )
    result.details["alloc_free_us"] = details


CELL_CASES = {  # what the timed cells do, besides N blocks kept alive from before
    "cell allocates nothing": "kept",
    "cell keeps 1 new block": "kept",
    "cell keeps N new blocks": "made",
}


def time_cells(result: result_file.Result, torch: Any, shell: Any, args: Any) -> None:
    """cell_started + cell_finished with N live blocks, kept from before or left by the cell."""
    tracer = set_mode(MODES[1], shell)
    compiler = shell.compile
    count = 1000
    details: dict[str, Any] = {}
    try:
        for n in args.blocks:
            for case, where in CELL_CASES.items():
                namespace: dict[str, Any] = {"torch": torch}
                cells = args.cells
                if where == "kept":
                    count += 1
                    code = f"held = [torch.empty(512, device='cuda') for _ in range({n})]\n"
                    held = compile(code, compiler.cache(code, count), "exec")
                    at_depth(args.depth, lambda: exec(held, namespace))  # noqa: B023
                else:  # a cell of 100 000 allocations takes ~1 s
                    cells = min(cells, max(3, 300_000 // n))
                new = {"cell allocates nothing": 0, "cell keeps 1 new block": 1}.get(case, n)
                code = (
                    "made = [torch.empty(512, dtype=torch.uint8, device='cuda') "
                    f"for _ in range({new})]\n"
                )
                timings: dict[str, list[float]] = {"started": [], "finished": [], "pair": []}
                groups = 0
                for _ in range(cells):
                    count += 1
                    cell_code = compile(code, compiler.cache(code, count), "exec")
                    t0 = time.perf_counter_ns()
                    tracer.cell_started(count)
                    t1 = time.perf_counter_ns()
                    at_depth(args.depth, lambda: exec(cell_code, namespace))  # noqa: B023
                    t2 = time.perf_counter_ns()
                    found = tracer.cell_finished(count)
                    t3 = time.perf_counter_ns()
                    if tracer.error:
                        raise RuntimeError(tracer.error)
                    groups = len(found)
                    namespace.pop("made", None)
                    timings["started"].append((t1 - t0) / 1e6)
                    timings["finished"].append((t3 - t2) / 1e6)
                    timings["pair"].append((t1 - t0 + t3 - t2) / 1e6)
                namespace.clear()
                gc.collect()
                summary = {k: stats.describe(v) for k, v in timings.items()}
                details[f"{n} blocks, {case}"] = {**summary, "groups": groups, "cells": cells}
                pair, started, finished = summary["pair"], summary["started"], summary["finished"]
                label = case.replace(" N ", f" {n} ") + (f", {n} live" if where == "kept" else "")
                result.log(
                    f"{label}: start {started['median']:.3f} ms, finish {finished['median']:.3f} ms"
                )
                result.add(
                    f"trace hooks per cell, {label}",
                    pair["median"],
                    "ms",
                    note=(f"{pair['median'] * 1e3 / n:.2f} µs per live block; " if new else "")
                    + f"p90 {pair['p90']:.3f} ms; cell_started median {started['median']:.3f} "
                    f"ms, cell_finished {finished['median']:.3f} ms",
                )
    finally:
        tracer.stop()
    result.details["cell_hooks_ms"] = details


def time_full_snapshot(result: result_file.Result, torch: Any, shell: Any, args: Any) -> None:
    """torch's ``_snapshot()`` (segments and the trace ring buffer) with the buffer full."""
    tracer = set_mode(MODES[1], shell)
    try:
        loop = alloc_loop(torch, 512, 60_000)  # 60 000 alloc+free: > 100 000 trace events
        at_depth(args.depth, loop)
        samples = []
        for _ in range(3 if args.quick else 5):
            t0 = time.perf_counter_ns()
            torch.cuda.memory._snapshot()
            samples.append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        torch.cuda.memory.memory_snapshot(include_traces=False)
        light = (time.perf_counter_ns() - t0) / 1e6
    finally:
        tracer.stop()
    result.details["full_snapshot_ms"] = stats.describe(samples)
    result.add(
        "torch _snapshot() with 100000 trace events (not used per cell)",
        stats.median(samples),
        "ms",
        note=f"memory_snapshot(include_traces=False), which the tracer uses: {light:.3f} ms",
    )


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("trace_cost", args)
    if args.quick:
        args.allocs, args.rounds, args.blocks, args.cells = 300, 3, [100, 1000], 5
    held = cuda_setup.hold_gpu_tensors(result, "allocation tracing (needs a CUDA GPU)")
    if not held:
        result.finish()
        return
    import torch
    from IPython.core.compilerop import CachingCompiler

    from nbgpumon._forensics.tracing import AllocationTracer

    probe = AllocationTracer(None)
    message = probe.start()
    usable = probe.active
    probe.stop()
    if not usable:
        result.skip("allocation tracing", message)
        result.finish()
        return
    shell = SimpleNamespace(compile=CachingCompiler())  # cell names and linecache, as IPython
    result.details.update(
        torch=torch.__version__, allocs=args.allocs, rounds=args.rounds, depth=args.depth
    )
    time_allocations(result, torch, shell, args)
    time_cells(result, torch, shell, args)
    time_full_snapshot(result, torch, shell, args)
    del held
    result.finish()


if __name__ == "__main__":
    main()
