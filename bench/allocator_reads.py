"""Cost of reading each framework's allocator (per device, per read), and of CuPy's peak hook
per allocation.

For torch, JAX and CuPy in turn (each only where it is installed and has a GPU), it brings the
framework up with a 1 GiB array on GPU 0, then times the source's ``active()`` + ``read(0)``,
as the sampler does at each allocator tick and the ledger at each cell's edges. Then, for CuPy,
it times ``cp.empty(...)`` + ``del`` pairs from the pool with and without nbgpumon's memory hook
armed on this thread, in rotated blocks, and reports the difference per allocation.

    python bench/allocator_reads.py --out DIR [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Callable
from typing import Any

import result_file
import stats

from nbgpumon._sources.frameworks import framework

GIB = 2**30
READ_TARGET_US = 50.0  # one framework's read on one device, at the allocator cadence
HOOK_TARGET_US = 2.0  # CuPy's hook per allocation, against a pool malloc of a few µs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reads", type=int, default=20_000, help="reads timed per framework")
    parser.add_argument("--blocks", type=int, default=30, help="hook on/off blocks, rotated")
    parser.add_argument("--allocs", type=int, default=5_000, help="allocations per block")


def _start_torch() -> Any:
    torch = importlib.import_module("torch")
    if not torch.cuda.is_available():
        raise RuntimeError("torch has no GPU here")
    return torch.empty(GIB, dtype=torch.uint8, device="cuda")


def _start_jax() -> Any:
    jnp = importlib.import_module("jax.numpy")
    x = jnp.ones((GIB // 4,), dtype=jnp.float32)
    x.block_until_ready()
    if x.devices().pop().platform == "cpu":
        raise RuntimeError("jax has no GPU backend here")
    return x


def _start_cupy() -> Any:
    cp = importlib.import_module("cupy")
    x = cp.ones(GIB // 4, dtype=cp.float32)
    cp.cuda.runtime.deviceSynchronize()
    return x


def _source(name: str) -> Callable[[], Any]:
    """A maker of the plug-in's allocator source for a machine of one GPU."""
    return lambda: framework(name).new_allocator(1)  # type: ignore[union-attr]


FRAMEWORKS: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "torch": (_start_torch, _source("torch")),
    "jax": (_start_jax, _source("jax")),
    "cupy": (_start_cupy, _source("cupy")),
}


def time_reads(source: Any, n: int) -> list[float]:
    """Microseconds of ``active()`` + ``read(0)``, one sample per call."""
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        if source.active():
            source.read(0)
        out.append((clock() - t0) / 1e3)
    return out


def time_allocations(cp: Any, n: int) -> float:
    """Mean microseconds of one pool allocation and its free (4 KiB, from the pool's cache)."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        a = cp.empty(1024, dtype=cp.float32)
        del a
    return (time.perf_counter_ns() - t0) / 1e3 / n


def bench_hook(result: result_file.Result, args: argparse.Namespace) -> None:
    cp = importlib.import_module("cupy")
    source: Any = _source("cupy")()
    source.hook_wanted = True  # what %config GPUMon.cupy_peak_hook = True does
    time_allocations(cp, 1000)  # warm the pool's free list
    off: list[float] = []
    on: list[float] = []
    for block in range(args.blocks):
        for armed in (False, True) if block % 2 == 0 else (True, False):  # rotated: drift
            if armed:
                source.watch_thread()
                if not source.peak_resettable:
                    raise RuntimeError(f"the hook did not arm: {source.status}")
                on.append(time_allocations(cp, args.allocs))
                source.close()
            else:
                off.append(time_allocations(cp, args.allocs))
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    result.add(
        "CuPy peak hook, per allocation+free", stats.median(diffs), "µs", HOOK_TARGET_US,
        f"median of {len(diffs)} block differences; without it {stats.median(off):.2f} µs",
        stats.bootstrap_ci(diffs),
    )  # fmt: skip
    result.details["cupy_hook_us"] = {"on": on, "off": off}


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.quick:
        args.reads, args.blocks, args.allocs = 500, 4, 500
    result = result_file.Result("allocator_reads", args)
    sources = {name: make() for name, (_, make) in FRAMEWORKS.items()}
    for name, source in sources.items():  # what every tick pays for a framework not in use
        samples = time_reads(source, args.reads)
        result.add(f"{name}: active() before it is up", stats.median(samples), "µs",
                   note=f"status: {source.status}")  # fmt: skip
    held = []
    for name, (start, _) in FRAMEWORKS.items():
        try:
            held.append(start())
        except Exception as exc:  # not installed, or no GPU for it here
            result.skip(f"{name} read", f"{type(exc).__name__}: {exc}")
            continue
        samples = time_reads(sources[name], args.reads)
        result.add(
            f"{name}: active() + read() of one device", stats.median(samples), "µs",
            READ_TARGET_US, f"p99 {stats.percentile(samples, 99):.1f} µs; "
            f"status: {sources[name].status}",
        )  # fmt: skip
        result.details[f"{name}_read_us"] = stats.describe(samples)
    try:
        bench_hook(result, args)
    except Exception as exc:
        result.skip("CuPy hook", f"{type(exc).__name__}: {exc}")
    result.finish()
    del held


if __name__ == "__main__":
    main()
