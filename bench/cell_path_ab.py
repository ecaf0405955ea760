"""What a cell's reply waits for by the kernels' own clocks, this tree against another (issue 43).

As the client sees a cell (``bench/cell_cost.py``), a change of a few hundredths of a
millisecond hides under what one pair of fresh kernels moves by. Each nbgpumon kernel times its
own cell path (``%gpumon status``: "replies waited for", the median and p99 of its last 200
cells), which moves far less. This starts fresh kernels of this tree and of ``--base DIR``
(another checkout's ``nbgpumon/``) in turn, ``--rounds`` of each, runs ``--cells`` of
``cell_cost.py``'s cells of ``--kind`` in each (``--pause`` seconds between them: 0 back to
back, 0.03 as a user reads each output; ``--chart`` shows the live chart first), and keeps
each kernel's two figures.

    python bench/cell_path_ab.py --base DIR [--kind trivial] [--rounds 3] [--cells 200]
        [--pause 0.03] [--chart] --out DIR
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import result_file
from cell_cost import KINDS, run, start

WAITED = re.compile(r"replies waited for ([\d.]+) ms \(p99 ([\d.]+)\)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", required=True, help="a checkout holding the other nbgpumon/")
    parser.add_argument("--kind", default="trivial", choices=sorted(KINDS))
    parser.add_argument("--rounds", type=int, default=3, help="kernels of each tree")
    parser.add_argument("--cells", type=int, default=200, help="cells per kernel")
    parser.add_argument("--pause", type=float, default=0.03, help="seconds between cells")
    parser.add_argument("--chart", action="store_true", help="the live chart shown first")


def waited(
    path_first: str | None, kind: str, cells: int, pause: float, chart: bool
) -> tuple[float, float]:
    """One fresh kernel's "replies waited for" (ms; median and p99 of its last 200 cells)
    after ``cells`` cells of ``kind``."""
    cell = KINDS[kind]
    manager, client = start(path_first)
    try:
        for code in ["%load_ext nbgpumon", *cell.setup, *(["%gpumon"] if chart else [])]:
            run(client, code)
        for _ in range(cells):
            if pause:
                time.sleep(pause)
            run(client, cell.cell)
        status = run(client, "%gpumon status")[1]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    found = WAITED.search(status)
    if found is None:
        raise SystemExit(f"no cell path figure in the kernel's status:\n{status}")
    return float(found.group(1)), float(found.group(2))


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.quick:
        args.rounds, args.cells = 1, 40
    result = result_file.Result("cell_path_ab", args)
    figures: dict[str, list[float]] = {"base": [], "this tree": []}
    p99s: dict[str, list[float]] = {"base": [], "this tree": []}
    for _ in range(args.rounds):  # (the two trees in turn: a slower spell hits both)
        for name, path in (("base", args.base), ("this tree", None)):
            ms, p99 = waited(path, args.kind, args.cells, args.pause, args.chart)
            figures[name].append(ms)
            p99s[name].append(p99)
            result.log(f"{name}: replies waited for {ms:.3f} ms (p99 {p99:.3f})")
    way = f"{args.kind}, pause {args.pause:g} s" + (", chart shown" if args.chart else "")
    for name in figures:
        for what, values in (("", figures[name]), (" p99", p99s[name])):
            note = ", ".join(f"{v:.3f}" for v in values)
            median = statistics.median(values)
            result.add(f"{way}: {name}, replies waited for{what}", median, "ms", None, note)
    result.details["kernels"] = figures
    result.details["kernels_p99"] = p99s
    result.finish()


if __name__ == "__main__":
    main()
