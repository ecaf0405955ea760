"""How long the main thread waits for the GIL while the live chart publishes Run All's rows.

What a cell pays for the chart is mostly not on its own path: the sampler's thread makes the
new records' rows and sends them, holding the GIL, and a cell that starts or ends meanwhile
waits (issue 43: the chart's p99). Measured where nothing else moves: one fresh kernel of
this tree and one of ``--base DIR`` (another checkout's ``nbgpumon/``) in turn, ``--rounds``
of each, the chart shown (``--no-chart``: not, the floor); then one cell that for
``--seconds`` sleeps 1 ms (giving the GIL up, as the main thread does waiting for the next
request), notes how late it woke, and stores a ledger record (as a cell's end does: the
publisher makes its row). The lateness over the 1 ms is the timer's and the wait for the GIL;
its median is the timer's, its p99 and p99.9 the sampler's thread's longest holds.

    python bench/gil_wait.py --base DIR [--rounds 3] [--seconds 8] [--no-chart] --out DIR
"""

from __future__ import annotations

import argparse
import json
import statistics

import result_file
from cell_cost import run, start

PROBE = """
import json as _json, time as _time, nbgpumon as _nbg
_s = _nbg.monitor()._session
_late, _n = [], 0
_end = _time.monotonic() + {seconds}
while _time.monotonic() < _end:
    _t = _time.perf_counter()
    _time.sleep(0.001)
    _late.append(_time.perf_counter() - _t - 0.001)
    _n += 1
    _s.cells_pipeline.store(_s.ledger.end(_s.ledger.begin("cell", "x", _n), execution_count=_n))
_late.sort()
_at = lambda q: _late[min(len(_late) - 1, int(q * len(_late)))] * 1e6
print("LATE=" + _json.dumps([len(_late), _at(0.5), _at(0.99), _at(0.999), _late[-1] * 1e6]))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", required=True, help="a checkout holding the other nbgpumon/")
    parser.add_argument("--rounds", type=int, default=3, help="kernels of each tree")
    parser.add_argument("--seconds", type=float, default=8.0, help="of 1 ms sleeps a kernel")
    parser.add_argument(
        "--no-chart", action="store_true", help="the chart not shown: the sampler's floor"
    )


def lateness(path_first: str | None, seconds: float, chart: bool) -> list[float]:
    """One fresh kernel's wake-ups: their count, then the median, p99, p99.9 and most µs late."""
    manager, client = start(path_first)
    try:
        for code in ("%load_ext nbgpumon", *(["%gpumon"] if chart else [])):
            run(client, code)
        out = run(client, PROBE.format(seconds=seconds), timeout=seconds + 120)[1]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    lines = [line for line in out.splitlines() if line.startswith("LATE=")]
    if not lines:
        raise SystemExit(f"the probe printed no figures:\n{out}")
    return json.loads(lines[0][len("LATE=") :])


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.quick:
        args.rounds, args.seconds = 1, 1.0
    result = result_file.Result("gil_wait", args)
    names = ("median", "p99", "p99.9", "most")
    figures: dict[str, list[list[float]]] = {"base": [], "this tree": []}
    for _ in range(args.rounds):  # (the two trees in turn: a slower spell hits both)
        for name, path in (("base", args.base), ("this tree", None)):
            count, *late = lateness(path, args.seconds, chart=not args.no_chart)
            figures[name].append(late)
            said = ", ".join(f"{n} {v:.0f}" for n, v in zip(names, late, strict=True))
            result.log(f"{name}: {count} wake-ups, µs late: {said}")
    for name, kernels in figures.items():
        for i, what in enumerate(names):
            values = [k[i] for k in kernels]
            note = ", ".join(f"{v:.0f}" for v in values)
            way = f"{name}{'' if args.no_chart else ', chart shown'}, woke late, {what}"
            result.add(way, statistics.median(values), "µs", None, note)
    result.details["kernels"] = figures
    result.finish()


if __name__ == "__main__":
    main()
