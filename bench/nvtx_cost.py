"""Per-cell cost of ``%gpumon nvtx on`` (an NVTX range pushed and popped around each cell).

In an in-process IPython shell with ``%load_ext nbgpumon`` and CUDA initialised with tensors
held (GPU only: without CUDA nbgpumon pushes no range, and the "on" case measures only the
check), it times ``pre_run_cell`` + ``post_run_cell`` called directly, and whole
``run_cell("pass")`` executions, with NVTX ranges off and on in alternating blocks; then one
``torch.cuda.nvtx.range_push`` + ``range_pop`` pair by itself. No NVTX tool is attached
unless the environment attaches one (``NVTX_INJECTION64_PATH``, or under ``nsys profile``):
the pair then costs what the tool makes it cost.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

import cuda_setup
import result_file
import stats
from hook_cost import loaded_shell, time_cells, time_hooks, unload

from nbgpumon._views.status.nvtx import nvtx_state_words

TARGET_MS = 0.05  # what the ranges may add to a cell: a small share of the hooks' 1 ms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=500, help="direct pre/post pairs per block")
    parser.add_argument("--blocks", type=int, default=6, help="off/on blocks, alternating")
    parser.add_argument("--cells", type=int, default=150, help="run_cell calls per block")


def time_range_pair(torch: Any, n: int) -> list[float]:
    """Microseconds of ``n`` range_push + range_pop pairs."""
    clock = time.perf_counter_ns
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    out = []
    for k in range(n):
        t0 = clock()
        push(f"[{k}] x = model(batch)")
        pop()
        out.append((clock() - t0) / 1e3)
    return out


def rotated(measure: Any, mon: Any, blocks: int) -> tuple[dict[str, list[float]], list[float]]:
    """``measure()`` (a list of µs) with ranges off and on, alternating which goes first;
    every sample by state, and each block's on-minus-off median difference."""
    samples: dict[str, list[float]] = {"off": [], "on": []}
    diffs = []
    for b in range(blocks):
        medians = {}
        for state in ("off", "on") if b % 2 == 0 else ("on", "off"):
            mon.nvtx(state == "on")
            gc.collect()
            timings = measure()
            samples[state] += timings
            medians[state] = stats.median(timings)
        diffs.append(medians["on"] - medians["off"])
    mon.nvtx(False)
    return samples, diffs


def report(result: Any, label: str, samples: dict[str, list[float]], diffs: list[float]) -> None:
    off, on = stats.median(samples["off"]), stats.median(samples["on"])
    low, high = stats.bootstrap_ci(diffs)
    result.details[label] = {k: stats.describe(v) for k, v in samples.items()}
    result.details[label]["block_differences_us"] = diffs
    result.log(
        f"{label}: {off:.1f} µs off, {on:.1f} µs on (difference 95% CI {low:.1f}..{high:.1f})"
    )
    result.add(
        f"added by NVTX ranges, {label}",
        (on - off) / 1e3,
        "ms",
        TARGET_MS,
        ci=(low / 1e3, high / 1e3),
        note=f"median {on:.1f} µs on vs {off:.1f} µs off; per-block difference 95% CI "
        f"{low:.1f}..{high:.1f} µs",
    )


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("nvtx_cost", args)
    pairs, blocks, cells = args.pairs, args.blocks, args.cells
    if args.quick:
        pairs, blocks, cells = 100, 2, 50

    held = cuda_setup.hold_gpu_tensors(result, "NVTX ranges pushed (no CUDA: none are)")
    shell, hooks, mon = loaded_shell()
    mon.stop()  # the sampler's thread would only add noise to both arms
    time_hooks(shell, hooks, 20)
    reply = mon.nvtx(True)  # what "on" means here (no CUDA: nothing is pushed)
    result.details.update(
        nvtx_on_reply=reply, nvtx_when_on=nvtx_state_words(mon._session.nvtx_ranges.state)
    )
    result.details["tensors_held"] = len(held)
    mon.nvtx(False)
    result.log(f"nvtx on: {reply}")

    samples, diffs = rotated(lambda: time_hooks(shell, hooks, pairs)["pair"], mon, blocks)
    report(result, "pre_run_cell + post_run_cell", samples, diffs)
    samples, diffs = rotated(lambda: time_cells(shell, cells), mon, blocks)
    report(result, "run_cell('pass')", samples, diffs)

    if held:
        import torch

        pair = stats.describe(time_range_pair(torch, pairs * 4))
        result.details["range_push_pop_us"] = pair
        result.log(f"range_push + range_pop: median {pair['median']:.2f} µs p99 {pair['p99']:.2f}")
        result.add("torch.cuda.nvtx range_push + range_pop", pair["median"], "µs")
    unload(shell)
    del held
    result.finish()


if __name__ == "__main__":
    main()
