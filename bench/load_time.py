"""Time of ``%load_ext nbgpumon`` in a fresh process (target <= 150 ms), import included.

Each measurement is a new interpreter: it starts an IPython InteractiveShell (not timed), then
times only ``run_line_magic("load_ext", "nbgpumon")``, then ``unload_ext``. Variants: a bare
shell, a shell where torch and numpy were already imported (as in most GPU notebooks), and
``import nbgpumon`` alone. One more child runs with ``-X importtime`` to name the slowest
imports. A discarded first child per variant writes the bytecode caches (into a folder of
the run's own, as an installed package has them, even where PYTHONDONTWRITEBYTECODE is set).
In a real kernel it also times the whole cell as the client waits for it, and the next cell's
extra time while what the load left to the sampler's thread finishes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

TARGET_MS = 150.0
RESULT_PREFIX = "BENCH_RESULT "
MARK = "BENCH_LOAD_STARTS"
VARIANTS = {
    "load": "%load_ext in a bare shell",
    "load_torch": "%load_ext with torch and numpy already imported",
    "import": "import nbgpumon alone",
    "numpy": "import numpy alone (what nbgpumon's own import waits for first)",
}


# -- the child: runs in a fresh interpreter ---------------------------------------------
def child(mode: str) -> None:
    """Measure one thing and print it as one ``BENCH_RESULT {json}`` line."""
    clock = time.perf_counter
    if mode == "import":
        t0 = clock()
        import nbgpumon  # noqa: F401

        print(RESULT_PREFIX + json.dumps({"import_ms": (clock() - t0) * 1e3}), flush=True)
        return
    if mode == "numpy":
        t0 = clock()
        import numpy

        print(RESULT_PREFIX + json.dumps({"import_ms": (clock() - t0) * 1e3}), flush=True)
        return
    if mode == "load_torch":
        import numpy  # noqa: F401
        import torch  # noqa: F401
    t0 = clock()
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell_ms = (clock() - t0) * 1e3
    if mode == "importtime":
        print(MARK, file=sys.stderr, flush=True)
    t0 = clock()
    shell.run_line_magic("load_ext", "nbgpumon")
    load_ms = (clock() - t0) * 1e3
    t0 = clock()
    shell.run_line_magic("unload_ext", "nbgpumon")
    unload_ms = (clock() - t0) * 1e3
    out = {"shell_ms": shell_ms, "load_ms": load_ms, "unload_ms": unload_ms}
    print(RESULT_PREFIX + json.dumps(out), flush=True)


# -- the parent ---------------------------------------------------------------------------
def run_child(mode: str, flags: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """One fresh interpreter measuring ``mode``: (its result, its stderr)."""
    env = dict(os.environ)
    env["IPYTHONDIR"] = tempfile.mkdtemp(prefix="nbgpumon-bench-ipython-")  # no user profile
    done = subprocess.run(
        [sys.executable, *flags, os.path.abspath(__file__), "--child", mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :]), done.stderr
    raise RuntimeError(
        f"child {mode!r} exited {done.returncode} without a result:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )


KERNEL_CELL = (
    "import time as _t\n"
    "_s = _t.perf_counter()\n"
    "get_ipython().run_line_magic('load_ext', 'nbgpumon')\n"
    "print('LOAD_MS', (_t.perf_counter() - _s) * 1e3)"
)
# The same fixed pure-Python work twice after loading: at once (Run All), while what the load
# left to the sampler's thread (numpy, the first sample) may still run, and a second later.
BUSY_CELL = "_x = 0\nfor _i in range(300_000): _x += _i\n"
FIRST_SAMPLE_CELL = (
    "import nbgpumon as _n, time as _t\n"
    "_m = _n.monitor()\n"
    "_d = _t.monotonic() + 10\n"
    "while _m.timeline.cursor == 0 and _t.monotonic() < _d: _t.sleep(0.001)\n"
    "print('SAMPLES', _m.timeline.cursor)"
)


def run_kernel() -> dict[str, float]:
    """``%load_ext nbgpumon`` as the first cell of a fresh ipykernel (ms): timed inside the
    cell (``load_ms``), and as the client waits for the cell's reply, less an empty cell's
    round trip (``cell_ms``, which adds the cell hooks' and the output's time); then the
    next cell's extra time, as the client waits for it, while the load's background work
    finishes (``next_cell_extra_ms``: a cell begins only once the timeline is built).

    This is what a notebook user waits for: IPython, ipykernel (and what they import, psutil
    among it) are already loaded; numpy, NVML and nbgpumon itself are not.
    """
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    printed: dict[str, float] = {}

    def hook(msg: dict[str, Any]) -> None:
        for line in msg["content"].get("text", "").splitlines():
            key, _, value = line.partition(" ")
            if key in ("LOAD_MS", "SAMPLES"):
                printed[key] = float(value)

    def cell(code: str) -> float:
        t0 = time.perf_counter()
        kc.execute_interactive(code, timeout=120, output_hook=hook)
        return (time.perf_counter() - t0) * 1e3

    try:
        empty = min(cell("pass") for _ in range(3))
        whole = cell(KERNEL_CELL)
        load_ms = printed["LOAD_MS"]
        next_ms = cell(BUSY_CELL)  # as the client waits: the cell's start may wait for numpy
        cell(FIRST_SAMPLE_CELL)
        time.sleep(1.0)
        steady_ms = cell(BUSY_CELL)
        if not printed.get("SAMPLES"):
            raise RuntimeError("the sampler took no sample within 10 s of loading")
    except KeyError as exc:
        raise RuntimeError(f"the kernel printed no {exc} line") from None
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {
        "load_ms": load_ms,
        "cell_ms": whole - empty,
        "next_cell_extra_ms": next_ms - steady_ms,
    }


def slowest_imports(stderr: str, top: int = 12) -> list[dict[str, Any]]:
    """Modules imported during load_ext, by their own import time (``-X importtime``)."""
    lines = stderr.split(MARK, 1)[-1].splitlines()
    found: list[dict[str, Any]] = []
    for line in lines:
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cumulative, name = (part.strip() for part in line[12:].split("|", 2))
        if own.isdigit():
            found.append(
                {"module": name, "self_ms": int(own) / 1e3, "cum_ms": int(cumulative) / 1e3}
            )
    total = sum(f["self_ms"] for f in found)
    ranked = sorted(found, key=lambda f: f["self_ms"], reverse=True)[:top]
    return [{"total_self_ms": total, "modules": len(found)}, *ranked]


def main() -> None:
    import result_file
    import stats

    def add_arguments(parser: Any) -> None:
        parser.add_argument("--runs", type=int, default=7, help="fresh processes per variant")

    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    # pip writes bytecode at install; a machine that says not to write it (or an install made
    # with --no-compile) would time compiling every module instead. Children and kernels
    # inherit this: their bytecode goes to a folder of this run's own.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="nbgpumon-bench-pycache-")
    result = result_file.Result("load_time", args)
    runs = 3 if args.quick else max(args.runs, 1)

    try:
        import torch  # noqa: F401

        variants = dict(VARIANTS)
    except ImportError as exc:
        variants = {k: v for k, v in VARIANTS.items() if k != "load_torch"}
        result.skip("load with torch imported", f"torch not importable ({exc})")

    measured: dict[str, list[dict[str, float]]] = {}
    for mode, label in variants.items():
        run_child(mode)  # writes .pyc files; not counted
        measured[mode] = [run_child(mode)[0] for _ in range(runs)]
        key = "import_ms" if mode in ("import", "numpy") else "load_ms"
        values = [m[key] for m in measured[mode]]
        d = stats.describe(values)
        result.log(f"{label}: median {d['median']:.1f} ms, max {d['max']:.1f} ms ({runs} runs)")
        note = f"max {d['max']:.1f} ms, min {d['min']:.1f} ms, {runs} fresh processes"
        if mode not in ("import", "numpy"):
            unload = stats.median([m["unload_ms"] for m in measured[mode]])
            note += f"; unload_ext median {unload:.1f} ms"
        target = None if mode in ("import", "numpy") else TARGET_MS
        result.add(label, d["median"], "ms", target, note)
    result.details["runs"] = measured

    try:
        run_kernel()  # writes .pyc files; not counted
        in_kernel = [run_kernel() for _ in range(runs)]
        kernel_rows = {
            "load_ms": "%load_ext as the first cell of a fresh ipykernel",
            "cell_ms": "… that whole cell as the client waits for it (less an empty cell)",
            "next_cell_extra_ms": "… extra time of the next cell, run at once (Run All)",
        }
        for key, label in kernel_rows.items():
            d = stats.describe([k[key] for k in in_kernel])
            result.log(f"{label}: median {d['median']:.1f} ms, max {d['max']:.1f} ms")
            result.add(
                label,
                d["median"],
                "ms",
                TARGET_MS if key != "next_cell_extra_ms" else None,
                f"max {d['max']:.1f} ms, min {d['min']:.1f} ms, {runs} fresh kernels",
            )
        result.details["kernel_runs"] = in_kernel
    except Exception as exc:  # no jupyter_client/ipykernel here: say so, keep the rest
        result.skip("load in a real kernel", f"{type(exc).__name__}: {exc}")

    _, stderr = run_child("load", ("-X", "importtime"))
    imports = slowest_imports(stderr)
    result.details["imports_during_load_ext"] = imports
    result.log(
        f"imports during load_ext (-X importtime, inflated by its own overhead): "
        f"{imports[0]['total_self_ms']:.0f} ms in {imports[0]['modules']} modules; slowest: "
        + ", ".join(f"{m['module']} {m['self_ms']:.1f}" for m in imports[1:6])
    )
    result.finish()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
