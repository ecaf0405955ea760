"""Per-cell cost of nbgpumon's IPython hooks (target <= 1 ms per cell).

In an in-process IPython shell with ``%load_ext nbgpumon`` (CUDA initialised and tensors held
when there is a GPU, so the hooks read and reset torch's allocator as in a real notebook), it
calls ``pre_run_cell`` + ``post_run_cell`` directly many times, then times whole
``run_cell("pass")`` executions with and without the extension for the end-to-end difference.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import tempfile
import time
from types import SimpleNamespace
from typing import Any

import cuda_setup
import json_comm
import result_file
import stats

from nbgpumon._sampling.timeline import Timeline

TARGET_MS = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=500, help="direct pre/post pairs per case")
    parser.add_argument("--blocks", type=int, default=6, help="with/without blocks, end to end")
    parser.add_argument("--cells", type=int, default=150, help="run_cell calls per block")
    parser.add_argument(
        "--long-cell-hours", type=float, default=1.0, help="length of the long-cell case"
    )
    parser.add_argument(
        "--ledger", type=int, default=10_000, help="records in the ledger, widget-shown case"
    )


def make_shell() -> Any:
    """A fresh InteractiveShell: empty profile, history kept in memory."""
    os.environ["IPYTHONDIR"] = tempfile.mkdtemp(prefix="nbgpumon-bench-ipython-")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


def time_hooks(
    shell: Any, hooks: Any, n: int, ran_for: float = 0.0, timeline: Timeline | None = None
) -> dict[str, list[float]]:
    """Microseconds of ``n`` pre_run_cell, post_run_cell and their sum.

    ``ran_for`` (seconds) makes each cell look that long to the ledger, and ``timeline`` gets
    that many seconds of 10 Hz rows while the cell "runs" (between the hooks, not timed), as
    the sampler would have appended them: the ledger's running figures see every one.
    """
    out: dict[str, list[float]] = {"pre": [], "post": [], "pair": []}
    clock = time.perf_counter_ns
    with contextlib.redirect_stdout(io.StringIO()):  # the one-time notice after a reset
        for k in range(n):
            info = SimpleNamespace(
                raw_cell="x = torch.ones(10)\n",
                store_history=True,
                silent=False,
                shell_futures=True,
                cell_id=f"bench-{k}",
            )
            result = SimpleNamespace(
                execution_count=shell.execution_count,
                error_in_exec=None,
                error_before_exec=None,
                info=info,
                result=None,
                success=True,
            )
            t0 = clock()
            hooks.pre_run_cell(info)
            t1 = clock()
            if ran_for and timeline is not None:
                row = [1.0] * len(timeline.columns)
                start = time.time()
                for _ in range(round(ran_for / 0.1)):  # an hour's rows, inside the cell
                    timeline.append(start, row)
                hooks._open.start -= ran_for  # and as if pre_run_cell had run that long ago
            t_post = clock()  # the appends above are the sampler's work, not the hooks'
            hooks.post_run_cell(result)
            t2 = clock()
            out["pre"].append((t1 - t0) / 1e3)
            out["post"].append((t2 - t_post) / 1e3)
            out["pair"].append((t1 - t0 + t2 - t_post) / 1e3)
    return out


def time_cells(shell: Any, n: int) -> list[float]:
    """Microseconds of ``n`` whole ``run_cell("pass", store_history=True)``."""
    clock = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = clock()
        shell.run_cell("pass", store_history=True)
        samples.append((clock() - t0) / 1e3)
    return samples


def filled_timeline(columns: tuple[str, ...], seconds: float) -> Timeline:
    """A Timeline holding the last ``seconds`` at 10 Hz (constant values)."""
    timeline = Timeline(columns)
    row = [1.0] * len(columns)
    now = time.time()
    n = round(seconds / 0.1)
    for i in range(n):
        timeline.append(now - (n - i) * 0.1, row)
    return timeline


def ledger_case(
    shell: Any, hooks: Any, mon: Any, records: int, pairs: int, result: Any, direct: dict
) -> None:
    """The hooks with ``records`` cells in the ledger and the widget shown (sampler stopped).

    The ledger is filled by the hooks themselves (untimed), then ``%gpumon``'s widget is made
    with a comm that encodes each message to JSON as the kernel does, so the ledger's update
    after each cell costs what it would in a kernel; its bytes per cell are reported too.
    """
    mon.stop()
    mon.config.history = max(mon.config.history, records)
    time_hooks(shell, hooks, records - len(mon._session.ledger.records()))
    json_comm.install()
    mon.widget()
    json_comm.SENT.clear()
    gc.collect()
    samples = time_hooks(shell, hooks, pairs)
    sent = sum(json_comm.SENT) / pairs
    label = (
        f"ledger of {len(mon._session.ledger.records()):,} records, widget shown, sampler stopped"
    )
    summary = {k: stats.describe(v) for k, v in samples.items()}
    direct[label] = summary
    pair = summary["pair"]
    result.log(
        f"{label}: pair median {pair['median']:.0f} µs p99 {pair['p99']:.0f}; "
        f"{sent:,.0f} bytes sent to the widget per cell"
    )
    result.add(
        f"hooks per cell, {label}",
        pair["median"] / 1e3,
        "ms",
        TARGET_MS,
        note=f"p99 {pair['p99'] / 1e3:.3f} ms; post median {summary['post']['median']:.0f} µs "
        f"p99 {summary['post']['p99']:.0f}; {sent:,.0f} bytes to the widget per cell",
    )
    result.add(f"bytes to the widget per cell, {label}", sent, "bytes")


def load(shell: Any) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        shell.run_line_magic("load_ext", "nbgpumon")


def loaded_shell() -> tuple[Any, Any, Any]:
    """A shell whose own paths are warm, then ``%load_ext nbgpumon``: (shell, its cell hooks,
    the monitor)."""
    shell = make_shell()
    time_cells(shell, 50)  # warm IPython's own paths up
    load(shell)
    from nbgpumon._api import current
    from nbgpumon._ipython import extension

    mon = current.current()
    assert mon is not None
    return shell, extension._wiring["hooks"], mon


def unload(shell: Any) -> None:
    shell.run_line_magic("unload_ext", "nbgpumon")


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("hook_cost", args)
    n_pairs, blocks, cells, long_hours = args.pairs, args.blocks, args.cells, args.long_cell_hours
    if args.quick:
        n_pairs, blocks, cells, long_hours = 100, 2, 50, 0.25

    held = cuda_setup.hold_gpu_tensors(result, "allocator reads and peak resets in the hooks")

    shell, hooks, mon = loaded_shell()
    n_gpu = len(mon._session.device_source.devices)
    if not n_gpu:
        result.skip("NVML reads in the hooks", mon._session.device_source.status)
    result.details.update(
        gpus=n_gpu,
        allocator_status=mon._session.allocator("torch").status,
        tensors_held=len(held),
        pairs=n_pairs,
    )
    time_hooks(shell, hooks, 20)

    long_label = f"cells of {long_hours:g} h (timeline full), sampler stopped, peak_mode=reset"
    cases = [
        ("sampler stopped, peak_mode=reset", False, "reset", 0.0),
        ("sampler running, peak_mode=reset", True, "reset", 0.0),
        ("sampler stopped, peak_mode=preserve", False, "preserve", 0.0),
        (long_label, False, "reset", long_hours * 3600),
    ]
    direct: dict[str, Any] = {}
    for label, running, peak_mode, ran_for in cases:
        mon.config.peak_mode = peak_mode
        if running:
            mon.start()
            time.sleep(0.3)
        else:
            mon.stop()
        real_timeline = mon._session.ledger.timeline
        long_timeline = None
        if ran_for:  # the ledger reads this one; the stopped sampler appends to none
            long_timeline = filled_timeline(real_timeline.columns, ran_for)
            mon._session.ledger.timeline = long_timeline
        gc.collect()
        pairs = max(n_pairs // 25, 4) if ran_for else n_pairs
        samples = time_hooks(shell, hooks, pairs, ran_for, long_timeline)
        mon._session.ledger.timeline = real_timeline
        summary = {k: stats.describe(v) for k, v in samples.items()}
        direct[label] = summary
        pair, pre, post = summary["pair"], summary["pre"], summary["post"]
        result.log(
            f"{label}: pair median {pair['median']:.0f} µs p99 {pair['p99']:.0f} "
            f"(pre {pre['median']:.0f}, post {post['median']:.0f})"
        )
        result.add(
            f"hooks per cell, {label}",
            pair["median"] / 1e3,
            "ms",
            TARGET_MS,
            note=f"{n_gpu} GPU(s); p99 {pair['p99'] / 1e3:.3f} ms; pre median "
            f"{pre['median']:.0f} µs p99 {pre['p99']:.0f}; post median {post['median']:.0f} µs "
            f"p99 {post['p99']:.0f}",
        )
        if n_gpu > 1:  # the hooks read every GPU's NVML memory and allocator: what each costs
            result.add(f"hooks per cell per GPU, {label}", pair["median"] / 1e3 / n_gpu, "ms")
    mon.config.peak_mode = "reset"
    ledger_case(shell, hooks, mon, args.ledger, n_pairs, result, direct)
    mon.start()
    result.details["direct_us"] = direct
    unload(shell)

    # -- end to end: the same cell with and without the extension -------------------------
    e2e: dict[str, list[float]] = {"without": [], "with": []}
    block_medians: list[tuple[float, float]] = []
    for b in range(blocks):
        medians: dict[str, float] = {}
        for state in ("without", "with") if b % 2 == 0 else ("with", "without"):
            if state == "with":
                load(shell)
                time_cells(shell, 5)
            gc.collect()
            timings = time_cells(shell, cells)
            if state == "with":
                unload(shell)
            e2e[state] += timings
            medians[state] = stats.median(timings)
        block_medians.append((medians["without"], medians["with"]))
    without, with_ext = stats.median(e2e["without"]), stats.median(e2e["with"])
    diffs = [w - wo for wo, w in block_medians]
    low, high = stats.bootstrap_ci(diffs)
    result.details["end_to_end_us"] = {
        "without": stats.describe(e2e["without"]),
        "with": stats.describe(e2e["with"]),
        "block_medians_without_with": block_medians,
    }
    result.log(
        f"run_cell('pass'): {without:.0f} µs without, {with_ext:.0f} µs with "
        f"({blocks} blocks of {cells})"
    )
    result.add(
        "run_cell('pass') added by the extension (end to end)",
        (with_ext - without) / 1e3,
        "ms",
        TARGET_MS,
        ci=(low / 1e3, high / 1e3),
        note=f"median {with_ext:.0f} µs with vs {without:.0f} µs without; per-block "
        f"difference 95% CI {low:.0f}..{high:.0f} µs",
    )
    del held
    result.finish()


if __name__ == "__main__":
    main()
