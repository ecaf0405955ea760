"""What ``%load_ext nbgpumon`` makes a user wait for (target <= 150 ms), and what
``%unload_ext`` right after it (<= 20 ms) and Run All's next cell (<= 20 ms extra) wait for.

In the first cell of a fresh ipykernel, as the client waits for the cells' replies: the load
cell (queued with the next one at once, as Run All sends them), that next cell's extra time
against the same cell run later, and, in another fresh kernel, ``%unload_ext`` as the cell
right after the load; an empty first cell in a fresh kernel is the floor the load cell is
also given less. Nothing is warmed for these kernels: no child runs first, and no bytecode
cache of the bench's own is used, and nothing it starts writes bytecode
(PYTHONDONTWRITEBYTECODE): each kernel reads the bytecode the packages have installed (pip
compiles a package's modules at install, unless told ``--no-compile``). nbgpumon's own (the
checkout first on PYTHONPATH, which nobody installed) are compiled the same way once, with
``compileall``, importing nothing; the result file says how many modules of nbgpumon, IPython,
ipykernel, psutil, traitlets and numpy had no bytecode. What the OS has cached of the files
is as the machine left it.

Besides, each in a fresh interpreter (no kernel): ``%load_ext`` in a bare InteractiveShell
(with torch and numpy imported first, too), ``import nbgpumon`` and ``import numpy`` alone,
and one load under ``-X importtime`` naming the slowest imports.
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
UNLOAD_TARGET_MS = 20.0
NEXT_CELL_TARGET_MS = 20.0
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
    env["IPYTHONDIR"] = IPYTHONDIR  # no user profile
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


IPYTHONDIR = tempfile.mkdtemp(prefix="nbgpumon-bench-ipython-")
LOAD_CELL = "%load_ext nbgpumon"
# Fixed pure-Python work: run at once after the load (Run All), and again later.
BUSY_CELL = "_x = 0\nfor _i in range(300_000): _x += _i\n"
THREADS_CELL = (
    "import threading as _th\n"
    "print('SAMPLER', any(t.name == 'nbgpumon-sampler' for t in _th.enumerate()))"
)


class Kernel:
    """A fresh ipykernel, and cells sent to it as a notebook's client sends them."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(
            kernel_name="python3", env={**os.environ, "IPYTHONDIR": IPYTHONDIR}
        )

    def run(self, cells: list[str], timeout: float = 120) -> tuple[list[float], str]:
        """Send ``cells`` at once; (ms from the sending to each one's reply, their output)."""
        kc = self.client
        start = time.perf_counter()
        ids = [kc.execute(code) for code in cells]
        replied: dict[str, float] = {}
        while len(replied) < len(ids):
            msg = kc.get_shell_msg(timeout=timeout)
            parent = msg["parent_header"].get("msg_id")
            if msg["msg_type"] == "execute_reply" and parent in ids:
                replied[parent] = (time.perf_counter() - start) * 1e3
                if msg["content"].get("status") != "ok":
                    raise RuntimeError(f"a cell failed: {msg['content']}")
        output = []
        while True:  # its output, up to the last cell's idle status
            msg = kc.get_iopub_msg(timeout=timeout)
            content = msg["content"]
            output.append(content.get("text", ""))
            last = msg["parent_header"].get("msg_id") == ids[-1]
            if last and msg["msg_type"] == "status" and content["execution_state"] == "idle":
                break
        return [replied[i] for i in ids], "".join(output)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def in_kernels() -> dict[str, float]:
    """One round of fresh kernels (ms): an empty first cell; the load as the first cell with
    the next cell queued behind it, and that cell again later; the unload right after the
    load."""
    out: dict[str, float] = {}
    kernel = Kernel()
    try:
        (out["empty_first_cell_ms"],), _ = kernel.run(["pass"])
    finally:
        kernel.close()
    kernel = Kernel()
    try:
        (load, busy), _ = kernel.run([LOAD_CELL, BUSY_CELL])
        deadline = time.monotonic() + 10  # the sampler's first tick, then a quiet second
        while time.monotonic() < deadline:
            _, text = kernel.run(
                ["import nbgpumon as _n; print('TICKS', _n.monitor()._session.sampler.ticks)"]
            )
            if int(text.split("TICKS", 1)[1].split()[0]) > 0:
                break
        time.sleep(1.0)
        (before, later), _ = kernel.run(["pass", BUSY_CELL])
        out["load_cell_ms"] = load
        out["next_cell_extra_ms"] = (busy - load) - (later - before)
    finally:
        kernel.close()
    kernel = Kernel()
    try:
        (load, unload, after, _), text = kernel.run(
            [LOAD_CELL, "%unload_ext nbgpumon", "pass", THREADS_CELL]
        )
        if "SAMPLER False" not in text:
            raise RuntimeError(f"the sampler's thread outlived %unload_ext: {text[-500:]}")
        out["unload_after_load_ms"] = (unload - load) - (after - unload)  # less an empty cell
    finally:
        kernel.close()
    return out


def compile_like_pip() -> dict[str, Any]:
    """Compile the nbgpumon that a kernel here imports, as ``pip install`` does, importing
    nothing; and say, for it and the packages a kernel and the load import, how many modules
    had no bytecode (an install made with ``pip --no-compile`` has none: each kernel then
    compiles what it imports, and that is counted, as a user of such an install waits for it)."""
    import compileall

    found = {name: _bytecode(name) for name in BYTECODE_OF}
    package = found["nbgpumon"]
    if "path" in package:
        compileall.compile_dir(package["path"], quiet=1)
    return found


BYTECODE_OF = ("nbgpumon", "IPython", "ipykernel", "psutil", "traitlets", "numpy")


def _bytecode(name: str) -> dict[str, Any]:
    """Where package ``name`` is and how many of its modules lack bytecode (nothing imported)."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        return {"missing": True}
    path = Path(spec.origin).parent
    sources = list(path.rglob("*.py"))
    lacking = sum(not Path(importlib.util.cache_from_source(str(p))).exists() for p in sources)
    return {"path": str(path), "modules": len(sources), "without_bytecode": lacking}


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
        parser.add_argument("--runs", type=int, default=7, help="fresh kernels per figure")

    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("load_time", args)
    runs = 3 if args.quick else max(args.runs, 1)
    # Nothing this run starts writes bytecode: each kernel finds what the install left, the
    # first like the last (nbgpumon's own compiled first, as pip compiles at install).
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    found = result.details["bytecode"] = compile_like_pip()
    result.log(
        "modules without bytecode before the run (nbgpumon's then compiled as pip would): "
        + ", ".join(f"{k} {v.get('without_bytecode', '-')}/{v.get('modules', '-')}"
                    for k, v in found.items())
    )  # fmt: skip

    try:
        rounds = [in_kernels() for _ in range(runs)]
        rows = {
            "load_cell_ms": ("%load_ext as the first cell of a fresh ipykernel, as the client "
                             "waits", TARGET_MS),
            "empty_first_cell_ms": ("… an empty first cell of a fresh ipykernel", None),
            "unload_after_load_ms": ("%unload_ext as the cell right after the load "
                                     "(less an empty cell)", UNLOAD_TARGET_MS),
            "next_cell_extra_ms": ("Run All: the cell after the load, its extra time",
                                   NEXT_CELL_TARGET_MS),
        }  # fmt: skip
        empty = stats.median([r["empty_first_cell_ms"] for r in rounds])
        for key, (label, target) in rows.items():
            d = stats.describe([r[key] for r in rounds])
            note = f"max {d['max']:.1f} ms, min {d['min']:.1f} ms, {runs} fresh kernels"
            if key == "load_cell_ms":
                note += f"; less an empty first cell: {d['median'] - empty:.1f} ms"
            result.log(f"{label}: median {d['median']:.1f} ms ({note})")
            result.add(label, d["median"], "ms", target, note)
        result.details["kernel_rounds"] = rounds
    except Exception as exc:  # no jupyter_client/ipykernel here: say so, keep the rest
        result.skip("load in a real kernel", f"{type(exc).__name__}: {exc}")

    variants = dict(VARIANTS)
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        del variants["load_torch"]
        result.skip("load with torch imported", f"torch not importable ({exc})")
    measured: dict[str, list[dict[str, float]]] = {}
    for mode, label in variants.items():
        measured[mode] = [run_child(mode)[0] for _ in range(runs)]
        key = "import_ms" if mode in ("import", "numpy") else "load_ms"
        d = stats.describe([m[key] for m in measured[mode]])
        note = f"max {d['max']:.1f} ms, min {d['min']:.1f} ms, {runs} fresh processes"
        if mode not in ("import", "numpy"):
            unload = stats.median([m["unload_ms"] for m in measured[mode]])
            note += f"; unload_ext median {unload:.1f} ms"
        result.log(f"{label}: median {d['median']:.1f} ms ({note})")
        result.add(label, d["median"], "ms", None, note)
    result.details["runs"] = measured

    _, stderr = run_child("importtime", ("-X", "importtime"))  # marks where the load starts
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
