"""Whether a cell costs the same at cell 10,000 as at cell 10 (DESIGN.md, invariant 12).

Two real ipykernels, driven through jupyter_client as a front end drives them: one with
``%load_ext nbgpumon`` and the live chart shown (``%gpumon``), one without nbgpumon. Each runs
the same trivial cell many times, one after the other, and each cell is timed as the client
waits for it: from the execute request to the kernel's idle status. The first and the last
``--window`` cells of each kernel give a median and a 99th percentile; the target is that the
last window's are within 1 ms of the first window's, beside the kernel without nbgpumon (its
own drift is IPython's).
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


def time_cells(setup: list[str], cells: int) -> list[float]:
    """Milliseconds of each of ``cells`` trivial cells in a fresh kernel after ``setup``."""
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for code in setup:
            run(client, code)
        return [run(client, CELL) * 1e3 for _ in range(cells)]
    finally:
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
    arms = {
        "nbgpumon, chart shown": ["%load_ext nbgpumon", "%gpumon"],
        "without nbgpumon": [],
    }
    found: dict[str, dict[str, float]] = {}
    for arm, setup in arms.items():
        result.log(f"{arm}: {cells} cells")
        found[arm] = windows(time_cells(setup, cells), size)
        result.details[arm] = found[arm]
    for arm, figures in found.items():
        for kind in ("median", "p99"):
            growth = figures[f"last_{kind}"] - figures[f"first_{kind}"]
            note = (
                f"first {size}: {figures[f'first_{kind}']:.2f} ms, "
                f"last {size}: {figures[f'last_{kind}']:.2f} ms"
            )
            target = TARGET_MS if arm.startswith("nbgpumon") else None
            result.add(f"{kind} growth, {arm}", growth, "ms", target, note)
    result.details["cells"], result.details["window"] = cells, size
    result.finish()


if __name__ == "__main__":
    main()
