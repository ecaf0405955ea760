"""What nbgpumon adds to a cell, as the client sees it (issue 43's budgets).

Fresh ipykernels, driven through jupyter_client as a front end drives them: with
``%load_ext nbgpumon`` (``nbgpumon``), and with the live chart shown too (``nbgpumon, chart``:
``%gpumon`` in a cell, as a user opens it), each beside a fresh kernel without nbgpumon; ``--base
DIR`` adds the same two arms with another checkout's nbgpumon first on the kernel's path, for a
before/after on one machine. Each arm and kind of cell gets its own pair of kernels: the kind's
setup cells, a warm-up, then the two take turns, a cell each, so that whatever else the machine
does weighs on both alike; the arms' pairs run one after the other, in the opposite order each
round, and each round starts fresh kernels. A cell is timed from the execute request to the
kernel's idle status after it. (Two kernels at a time: more, on a small machine, would charge
each the others' cache misses.)

The kinds (torch on the GPU when one is usable, else on the CPU; without torch, the dict alone):

* ``trivial``: ``x = i`` with 2,000 small tensors and a 5,000-key dict alive;
* ``step``: one AdamW step of a 96-parameter-tensor model, its loss read (``.item()``);
* ``kinds``: ``t = torch.ones(1024)`` with a 1,000-parameter-tensor model and its AdamW state
  alive (a cell whose memory must be read by kind).

The added cost is an arm's median (and p99) minus that of the bare kernels beside it, pooled
over the rounds, with a bootstrap interval of the medians' difference. A kernel finishes a
quiet cell's end once the cell's idle status is sent, or at the next cell's start if that comes
first (then that cell waits for it; the kernel's status counts it as waited for): by default a
kernel's next cell follows as soon as the other kernel's cell beside it is done, so a kernel
idles for about one cell between its own (5–10 ms on the development VM), and ``--pause MS``
puts a user's pause between a kernel's cells. ``--queued N``: blocks of N
cells sent truly at once (as Run All sends them), each timed from the first request to the last
cell's idle status and divided by N, the two kernels taking turns a block each. ``--nbclient``:
each arm's cells and the bare kernel's also run as a notebook by nbclient (as papermill and CI
run notebooks: each cell sent once the one before has its reply and idle status), timed as
nbclient records a cell: from the kernel's busy status to its reply, both stamped by the kernel
(the issue's figures). ``--arms
floor``: a kernel with no nbgpumon whose two hooks make only the readings exact per-cell
figures need (``FLOOR``), what they cost before any bookkeeping. At the end, each nbgpumon
kernel's own account of its cell path (``%gpumon status``) is kept in the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import os
import queue
import random
import time
from dataclasses import dataclass
from typing import Any

import result_file
import stats
from jupyter_client.manager import start_new_kernel

# issue 43, as the client sees a cell: (median, p99) added, in ms; None: no target
GPU_TARGETS = {"trivial": (0.2, 0.4), "step": (0.3, None), "kinds": (1.5, None)}
CPU_TARGETS = {"trivial": (0.15, None), "step": (None, None), "kinds": (None, None)}

_DEVICE = """
try:
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
except ImportError:
    torch = None
"""


@dataclass(frozen=True)
class CellKind:
    setup: tuple[str, ...]
    cell: str


KINDS = {
    "trivial": CellKind(
        (
            _DEVICE,
            "table = {k: str(k) for k in range(5000)}\n"
            "small = [torch.ones(8, device=dev) for _ in range(2000)] if torch else []\ni = 1",
        ),
        "x = i",
    ),
    "step": CellKind(
        (
            _DEVICE,
            "model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(48)]).to(dev)\n"
            "opt = torch.optim.AdamW(model.parameters())\n"
            "batch = torch.randn(32, 64, device=dev)\n"
            "def step():\n"
            "    opt.zero_grad(set_to_none=True)\n"
            "    loss = model(batch).square().mean()\n"
            "    loss.backward()\n"
            "    opt.step()\n"
            "    return loss\n"
            "step().item()",
        ),
        "loss = step().item()",
    ),
    "kinds": CellKind(
        (
            _DEVICE,
            "big = torch.nn.ModuleList([torch.nn.Linear(32, 32) for _ in range(500)]).to(dev)\n"
            "bopt = torch.optim.AdamW(big.parameters())\n"
            "for p in big.parameters():\n"
            "    p.grad = torch.zeros_like(p)\n"
            "bopt.step()",
        ),
        "t = torch.ones(1024, device=dev)",
    ),
}


# The "floor" arm: a cell's exact readings and nothing else, as two plain IPython hooks (torch's
# allocator read and peak reset where CUDA is up, the RSS and its high-water mark restarted at
# the start, both read at the end): what exact per-cell figures cost before any bookkeeping.
FLOOR = """
import ctypes as _ctypes, os as _os, sys as _sys
def _floor_hooks():
    libc = _ctypes.PyDLL(None)  # (the GIL kept through each call, as nbgpumon's reads keep it)
    libc.pread.argtypes = (_ctypes.c_int, _ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_long)
    libc.write.argtypes = (_ctypes.c_int, _ctypes.c_char_p, _ctypes.c_size_t)
    statm = _os.open("/proc/self/statm", _os.O_RDONLY)
    status = _os.open("/proc/self/status", _os.O_RDONLY)
    try:
        clear = _os.open("/proc/self/clear_refs", _os.O_WRONLY)
    except OSError:
        clear = None
    def read(fd, size):
        buffer = _ctypes.create_string_buffer(size)
        return _ctypes.string_at(buffer, libc.pread(fd, buffer, size, 0))
    def cuda():
        torch = _sys.modules.get("torch")
        return torch._C if torch is not None and torch.cuda.is_initialized() else None
    def start(info=None):
        native = cuda()
        if native is not None:
            native._cuda_memoryStats(0)
            native._cuda_resetPeakMemoryStats(0)
        read(statm, 128)
        if clear is not None:
            libc.write(clear, b"5", 1)
    def end(result=None):
        native = cuda()
        if native is not None:
            native._cuda_memoryStats(0)
        read(status, 8192)
    get_ipython().events.register("pre_run_cell", start)
    get_ipython().events.register("post_run_cell", end)
_floor_hooks()
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cells", type=int, default=300, help="timed cells per kernel a round")
    parser.add_argument("--warmup", type=int, default=30, help="untimed cells first")
    parser.add_argument("--rounds", type=int, default=2, help="fresh kernels each round")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}"
    )
    parser.add_argument(
        "--arms",
        default="nbgpumon,chart",
        help="comma-separated, of nbgpumon, chart, floor (the exact readings alone, no nbgpumon)",
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="ms between a kernel's cells, as a user pauses (0: back to back, as nbclient runs)",
    )
    parser.add_argument(
        "--base", default=None, help="another checkout: its nbgpumon as arms 'base', 'base, chart'"
    )
    parser.add_argument(
        "--queued",
        type=int,
        default=0,
        help="also time blocks of this many cells sent at once (Run All), 0: not",
    )
    parser.add_argument("--blocks", type=int, default=8, help="queued blocks per kernel a round")
    parser.add_argument(
        "--nbclient",
        action="store_true",
        help="also run each arm's cells as a notebook through nbclient, timed by its record",
    )


def run(client: Any, code: str, timeout: float = 120.0) -> tuple[float, str]:
    """Seconds from sending ``code`` to the kernel's idle status after it, and its text output
    (a traceback's too)."""
    started = time.perf_counter()
    msg_id = client.execute(code)
    deadline = started + timeout
    text: list[str] = []
    while time.perf_counter() < deadline:
        try:
            msg = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            return time.perf_counter() - started, "".join(text)
        if kind == "stream":
            text.append(content["text"])
        elif kind == "error":
            text.append("\n".join(content["traceback"]))
        elif kind in ("execute_result", "display_data"):
            text.append(content["data"].get("text/plain", ""))
    raise TimeoutError(f"no idle within {timeout} s after {code!r}")


def run_queued(client: Any, code: str, cells: int, timeout: float = 120.0) -> float:
    """Seconds from sending ``cells`` requests of ``code`` at once to the kernel's idle status
    after the last, a cell's share of it (what Run All waits for, the kernel's work after each
    cell's reply included)."""
    started = time.perf_counter()
    ids = [client.execute(code) for _ in range(cells)]
    last, deadline = ids[-1], started + timeout
    while time.perf_counter() < deadline:
        try:
            msg = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        content = msg["content"]
        if (
            msg["parent_header"].get("msg_id") == last
            and msg["msg_type"] == "status"
            and content["execution_state"] == "idle"
        ):
            return (time.perf_counter() - started) / cells
    raise TimeoutError(f"no idle within {timeout} s after {cells} cells of {code!r}")


Setup = tuple[list[str], "str | None"]
BARE: Setup = ([], None)


def arm_setups(arms: list[str], base: str | None) -> dict[str, Setup]:
    """Each arm's first cells and the checkout first on its kernel's path (None: this one's)."""
    known = {
        "nbgpumon": ("nbgpumon", ["%load_ext nbgpumon"]),
        "chart": ("nbgpumon, chart", ["%load_ext nbgpumon", "%gpumon"]),
        "floor": ("floor", [FLOOR]),
    }
    out: dict[str, Setup] = {}
    for arm in arms:
        if arm not in known:
            raise SystemExit(f"unknown arm {arm!r}: nbgpumon, chart or floor")
        name, cells = known[arm]
        out[name] = (cells, None)
        if base is not None and arm != "floor":
            out[name.replace("nbgpumon", "base")] = (cells, base)
    return out


def kernel_env(path_first: str | None) -> dict[str, str]:
    """This process's environment, with ``path_first`` (a checkout) first on the kernel's path."""
    env = dict(os.environ)
    if path_first is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path_first, env.get("PYTHONPATH")) if p)
    return env


def start(path_first: str | None) -> tuple[Any, Any]:
    return start_new_kernel(kernel_name="python3", env=kernel_env(path_first))


@dataclass
class PairTimes:
    """One pair of kernels' milliseconds a cell: waited for one at a time, then queued."""

    arm: list[float]
    bare: list[float]
    arm_queued: list[float]
    bare_queued: list[float]
    status: str


def one_pair(
    kind: CellKind,
    setup: Setup,
    bare_first: bool,
    cells: int,
    warmup: int,
    queued: int = 0,
    blocks: int = 0,
    pause: float = 0.0,
) -> PairTimes:
    """Milliseconds of ``cells`` cells in a fresh kernel set up by ``setup`` and in a fresh bare
    one, taking turns; then ``blocks`` blocks of ``queued`` cells sent at once, taking turns;
    and the first's ``%gpumon status`` at the end."""
    pair = {"arm": setup, "bare": BARE}
    order = ["bare", "arm"] if bare_first else ["arm", "bare"]
    kernels = {side: start(pair[side][1]) for side in order}
    try:
        for side in order:
            client = kernels[side][1]
            for code in [*pair[side][0], *kind.setup]:
                _, text = run(client, code)
                if "Error" in text or "Traceback" in text:
                    raise RuntimeError(f"{side}: {code!r} failed:\n{text}")
        times: dict[str, list[float]] = {side: [] for side in order}
        for n in range(warmup + cells):
            for side in order:
                if pause:  # (before each kernel's cell: both meet it after the same idle)
                    time.sleep(pause)  # a user's pause, not a wait for a condition
                seconds, _ = run(kernels[side][1], kind.cell)
                if n >= warmup:
                    times[side].append(seconds * 1e3)
        queued_times: dict[str, list[float]] = {side: [] for side in order}
        for n in range(blocks + 1 if queued else 0):  # (the first block: a warm-up)
            for side in order if n % 2 == 0 else order[::-1]:
                seconds = run_queued(kernels[side][1], kind.cell, queued)
                if n:
                    queued_times[side].append(seconds * 1e3)
        uses_nbgpumon = any("nbgpumon" in code for code in setup[0])
        status = run(kernels["arm"][1], "%gpumon status")[1] if uses_nbgpumon else ""
        return PairTimes(
            times["arm"], times["bare"], queued_times["arm"], queued_times["bare"], status
        )
    finally:
        for manager, client in kernels.values():
            client.stop_channels()
            manager.shutdown_kernel(now=True)


def nbclient_times(setup: Setup, kind: CellKind, cells: int, warmup: int) -> list[float]:
    """Milliseconds from each timed cell's busy status to its reply, as nbclient records them
    when it runs ``setup``'s cells, the kind's and ``warmup + cells`` of its cell as a notebook
    in a fresh kernel."""
    import nbformat
    from nbclient import NotebookClient

    sources = [*setup[0], *kind.setup, *[kind.cell] * (warmup + cells)]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in sources])
    NotebookClient(notebook, kernel_name="python3", record_timing=True, timeout=120).execute(
        env=kernel_env(setup[1])
    )
    times = []
    for cell in notebook.cells[-cells:]:
        stamps = cell.metadata["execution"]
        busy, reply = (
            datetime.datetime.fromisoformat(stamps[key].replace("Z", "+00:00"))
            for key in ("iopub.status.busy", "shell.execute_reply")
        )
        times.append((reply - busy).total_seconds() * 1e3)
    return times


def added_ci(arm: list[float], bare: list[float], resamples: int = 1000) -> tuple[float, float]:
    """95% bootstrap interval of median(arm) - median(bare)."""
    rng = random.Random(0)
    diffs = sorted(
        stats.median(rng.choices(arm, k=len(arm))) - stats.median(rng.choices(bare, k=len(bare)))
        for _ in range(resamples)
    )
    return stats.percentile(diffs, 2.5), stats.percentile(diffs, 97.5)


def on_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.quick:
        args.cells, args.warmup, args.rounds = 40, 5, 1
    result = result_file.Result("cell_cost", args)
    gpu = on_gpu()
    targets = GPU_TARGETS if gpu else CPU_TARGETS
    setups = arm_setups(args.arms.split(","), args.base)
    shape = {"cells": args.cells, "rounds": args.rounds, "warmup": args.warmup}
    result.details.update(shape, gpu=gpu, base=args.base, pause_ms=args.pause)
    for name in args.kinds.split(","):
        kind = KINDS[name]
        pooled = {arm: ([], []) for arm in setups}  # arm -> (its times, its bare kernels')
        queued = {arm: ([], []) for arm in setups}  # the same, a cell's share of a block
        by_nbclient = {arm: ([], []) for arm in setups}  # the same, as nbclient records them
        statuses: dict[str, list[str]] = {arm: [] for arm in setups}
        for r in range(args.rounds):
            order = list(setups) if r % 2 == 0 else list(reversed(setups))
            result.log(f"{name}: round {r + 1}, {' / '.join(order)}")
            for arm in order:
                pair = one_pair(
                    kind,
                    setups[arm],
                    r % 2 == 1,
                    args.cells,
                    args.warmup,
                    args.queued,
                    args.blocks,
                    args.pause / 1e3,
                )
                pooled[arm][0].extend(pair.arm)
                pooled[arm][1].extend(pair.bare)
                queued[arm][0].extend(pair.arm_queued)
                queued[arm][1].extend(pair.bare_queued)
                statuses[arm].append(pair.status)
                if args.nbclient:
                    sides = [(setups[arm], 0), (BARE, 1)]
                    for side, at in sides if r % 2 == 0 else sides[::-1]:
                        times = nbclient_times(side, kind, args.cells, args.warmup)
                        by_nbclient[arm][at].extend(times)
        median_target, p99_target = targets[name]
        details = {}
        for arm, (mine, bare) in pooled.items():
            arm_stats, bare_stats = stats.describe(mine), stats.describe(bare)
            details[arm] = {"arm": arm_stats, "bare": bare_stats, "status": statuses[arm]}
            ours = arm.startswith("nbgpumon")  # (the base's and the floor's: no target)
            note = f"{arm_stats['median']:.2f} ms vs bare {bare_stats['median']:.2f} ms"
            result.log(  # (as it goes: a run cut short still says what it measured)
                f"{name}, {arm}: added {arm_stats['median'] - bare_stats['median']:+.3f} ms "
                f"median, {arm_stats['p99'] - bare_stats['p99']:+.3f} ms p99 ({note})"
            )
            result.add(
                f"{name}: added, {arm}, median",
                arm_stats["median"] - bare_stats["median"],
                "ms",
                median_target if ours else None,
                note,
                added_ci(mine, bare),
            )
            result.add(
                f"{name}: added, {arm}, p99",
                arm_stats["p99"] - bare_stats["p99"],
                "ms",
                p99_target if ours else None,
            )
            mine_queued, bare_queued = queued[arm]
            if mine_queued and bare_queued:
                arm_q, bare_q = stats.describe(mine_queued), stats.describe(bare_queued)
                details[arm].update(queued=arm_q, bare_queued=bare_q)
                added = arm_q["median"] - bare_q["median"]
                note = (
                    f"{arm_q['median']:.2f} ms vs bare {bare_q['median']:.2f} ms a cell, "
                    f"{arm_q['n']} blocks of {args.queued}"
                )
                result.log(
                    f"{name}, {arm}: queued (Run All), added {added:+.3f} ms a cell ({note})"
                )
                result.add(
                    f"{name}: added, {arm}, queued",
                    added,
                    "ms",
                    None,
                    note,
                    added_ci(mine_queued, bare_queued),
                )
            mine_nb, bare_nb = by_nbclient[arm]
            if mine_nb and bare_nb:
                arm_n, bare_n = stats.describe(mine_nb), stats.describe(bare_nb)
                details[arm].update(nbclient=arm_n, bare_nbclient=bare_n)
                added = arm_n["median"] - bare_n["median"]
                note = f"{arm_n['median']:.3f} ms vs bare {bare_n['median']:.3f} ms, busy to reply"
                result.log(f"{name}, {arm}: by nbclient, added {added:+.3f} ms ({note})")
                result.add(
                    f"{name}: added, {arm}, nbclient",
                    added,
                    "ms",
                    median_target if ours else None,
                    note,
                    added_ci(mine_nb, bare_nb),
                )
                result.add(
                    f"{name}: added, {arm}, nbclient p99",
                    arm_n["p99"] - bare_n["p99"],
                    "ms",
                    p99_target if ours else None,
                )
        result.details[name] = {"cell": kind.cell, "arms": details}
    result.finish()


if __name__ == "__main__":
    main()
