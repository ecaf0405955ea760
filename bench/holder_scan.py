"""Time of one holder scan over a namespace of 10,000 objects (target <= 50 ms).

The namespace mixes what notebooks hold: small lists and dicts of numbers, plain objects with
attributes, strings, numpy arrays (some shared as views), CPU torch tensors, a small model and
its optimizer when torch is installed, and an output cache. It is scanned for host memory (the
same walk that looks for CUDA tensors on a GPU; without one, host is what there is to find).
Reported: the median of repeated scans, and whether any scan ran out of its 50 ms budget.
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any

import result_file
import stats

TARGET_MS = 50.0


def add_arguments(parser: Any) -> None:
    parser.add_argument("--objects", type=int, default=10_000, help="objects in the namespace")
    parser.add_argument("--repeats", type=int, default=30, help="scans timed")


class Record:
    def __init__(self, i: int) -> None:
        self.step = i
        self.loss = float(i)
        self.tags = ["a", "b"]


def namespace(objects: int) -> dict[str, Any]:
    """A user namespace holding about ``objects`` objects in all."""
    import numpy as np

    ns: dict[str, Any] = {}
    made = 0
    base = np.ones(2**16)
    i = 0
    while made < objects:
        kind = i % 5
        if kind == 0:
            ns[f"values_{i}"] = [float(i), i, str(i)]
            made += 4
        elif kind == 1:
            ns[f"config_{i}"] = {"lr": 0.1, "name": f"run{i}", "sizes": (1, 2, 3)}
            made += 6
        elif kind == 2:
            ns[f"record_{i}"] = Record(i)
            made += 5
        elif kind == 3:
            ns[f"array_{i}"] = base[i % 100 :] if i % 2 else np.ones(64)
            made += 1
        else:
            ns[f"history_{i}"] = [Record(i), Record(i + 1)]
            made += 11
        i += 1
    if importlib.util.find_spec("torch") is not None:
        import torch

        model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(8)))
        opt = torch.optim.Adam(model.parameters())
        model(torch.ones(2, 64)).sum().backward()
        opt.step()
        ns.update(model=model, opt=opt, batch=torch.ones(32, 64))
    ns["Out"] = {n: np.ones(16) for n in range(50)}
    return ns


def main() -> None:
    from nbgpumon._forensics.holder_scan import scan

    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("holder_scan", args)
    repeats = 5 if args.quick else args.repeats
    ns = namespace(args.objects)
    shell = SimpleNamespace(user_ns=ns, user_ns_hidden={}, displayhook=None)
    scan(shell, "host")  # warm-up
    timings, partial, looked_at = [], 0, 0
    for _ in range(repeats):
        found = scan(shell, "host", budget=TARGET_MS / 1000)
        timings.append(found.seconds * 1000)
        partial += bool(found.partial)
        looked_at = found.objects
    d = stats.describe(timings)
    result.log(
        f"{len(ns)} names, {looked_at} objects looked at: median {d['median']:.1f} ms, "
        f"p90 {d['p90']:.1f} ms; {partial} of {repeats} scans hit the budget"
    )
    result.add(
        f"holder scan, namespace of {args.objects:,} objects",
        d["median"],
        "ms",
        TARGET_MS,
        note=f"p90 {d['p90']:.1f} ms, max {d['max']:.1f} ms; {looked_at} objects looked at; "
        f"{partial}/{repeats} scans stopped at the budget",
    )
    result.finish()


if __name__ == "__main__":
    main()
