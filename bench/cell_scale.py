"""Whether a cell costs the same at cell 10,000 as at cell 10 (DESIGN.md, invariant 12).

Two real ipykernels, driven through jupyter_client as a front end drives them: one with
``%load_ext nbgpumon`` and the live chart shown (``%gpumon``), one without nbgpumon. Each runs
the same trivial cell many times, one after the other, and each cell is timed as the client
waits for it: from the execute request to the kernel's idle status. The first and the last
``--window`` cells of each kernel give a median and a 99th percentile; the target is that the
last window's are within 1 ms of the first window's, beside the kernel without nbgpumon (its
own drift is IPython's and the machine's: the kernels take turns, a cell each, so the drift
weighs on both alike, and the growth beyond the bare kernel's is nbgpumon's own).
"""

from __future__ import annotations

import argparse
import queue
import time
from typing import Any

import result_file
import stats
from jupyter_client.manager import start_new_kernel

TARGET_MS = 1.0
CELL = "x = 1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cells", type=int, default=10_000, help="cells each kernel runs")
    parser.add_argument("--window", type=int, default=500, help="cells in the first/last window")


def run(client: Any, code: str, timeout: float = 60.0) -> float:
    """Seconds from sending ``code`` to the kernel's idle status after it."""
    started = time.perf_counter()
    msg_id = client.execute(code)
    deadline = started + timeout
    while time.perf_counter() < deadline:
        try:
            msg = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            return time.perf_counter() - started
    raise TimeoutError(f"no idle within {timeout} s after {code!r}")


def time_cells(setups: dict[str, list[str]], cells: int) -> dict[str, list[float]]:
    """Milliseconds of each of ``cells`` trivial cells in a fresh kernel per arm, after its
    setup cells. The kernels take turns, a cell each, so that whatever else the machine does
    meanwhile weighs on every arm alike."""
    kernels = {arm: start_new_kernel(kernel_name="python3") for arm in setups}
    try:
        for arm, code in setups.items():
            for line in code:
                run(kernels[arm][1], line)
        times: dict[str, list[float]] = {arm: [] for arm in setups}
        for _ in range(cells):
            for arm, (_, client) in kernels.items():
                times[arm].append(run(client, CELL) * 1e3)
        return times
    finally:
        for manager, client in kernels.values():
            client.stop_channels()
            manager.shutdown_kernel(now=True)


def windows(times: list[float], size: int) -> dict[str, float]:
    first, last = times[:size], times[-size:]
    return {
        "first_median": stats.median(first),
        "last_median": stats.median(last),
        "first_p99": stats.percentile(first, 99),
        "last_p99": stats.percentile(last, 99),
    }


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    cells, size = (600, 100) if args.quick else (args.cells, args.window)
    result = result_file.Result("cell_scale", args)
    ours, bare = "nbgpumon, chart shown", "without nbgpumon"
    arms = {ours: ["%load_ext nbgpumon", "%gpumon"], bare: []}
    result.log(f"{len(arms)} kernels, {cells} cells each, taking turns")
    found = {arm: windows(times, size) for arm, times in time_cells(arms, cells).items()}
    result.details.update(found)
    for kind in ("median", "p99"):
        growth = {arm: f[f"last_{kind}"] - f[f"first_{kind}"] for arm, f in found.items()}
        for arm, figures in found.items():
            note = (
                f"first {size}: {figures[f'first_{kind}']:.2f} ms, "
                f"last {size}: {figures[f'last_{kind}']:.2f} ms"
            )
            result.add(
                f"{kind} growth, {arm}", growth[arm], "ms", TARGET_MS if arm == ours else None, note
            )
        result.add(
            f"{kind} growth beyond the bare kernel's", growth[ours] - growth[bare], "ms", TARGET_MS
        )
    result.details["cells"], result.details["window"] = cells, size
    result.finish()


if __name__ == "__main__":
    main()
