"""GIL-held time per sampler tick per GPU (target <= 40 µs).

Part 1 calls ``Sampler.tick()`` directly and times it (wall and thread CPU), for fast-only
ticks, ticks that also read torch's allocator, and slow-cadence ticks. Wall time is an upper
bound on the GIL held: NVML calls release the GIL while they wait on the driver.

Part 2 is the real GIL measure: the sampler thread runs at 100 Hz while the main thread runs a
pure-Python counting loop, interleaved with rounds where the sampler is stopped. The loop's
lost throughput, spread over the ticks that ran, is the GIL time each tick takes from the
program (its own Python work plus the thread switches it forces).
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from collections.abc import Callable
from functools import partial

import cuda_setup
import result_file
import stats

import nbgpumon
from nbgpumon._sampling.sampler import Sampler
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._sources.base import DETAIL, FAST

TARGET_US = 40.0
GIL_INTERVAL = 0.01  # 100 Hz, the fastest the sampler allows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ticks", type=int, default=2000, help="direct ticks per mode")
    parser.add_argument("--rounds", type=int, default=8, help="on/off rounds of the GIL test")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one GIL-test run")


def time_ticks(sampler: Sampler, n: int, mode: str) -> tuple[list[float], list[float]]:
    """Per-tick wall and thread-CPU microseconds of ``n`` direct ticks in ``mode``."""
    wall: list[float] = []
    cpu: list[float] = []
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    for _ in range(n):
        # The sampler decides what a tick reads from these deadlines (monotonic seconds).
        for cadence in sampler._next:  # only ``mode`` is due (``fast`` alone: none is)
            sampler._next[cadence] = 0.0 if cadence == mode else math.inf
        sampler._soonest = min(sampler._next.values())
        c0, w0 = cpu_clock(), clock()
        sampler.tick()
        w1, c1 = clock(), cpu_clock()
        wall.append((w1 - w0) / 1e3)
        cpu.append((c1 - c0) / 1e3)
    return wall, cpu


def time_call(fn: Callable[[], object], n: int) -> dict[str, float]:
    """Median etc. of ``fn()`` in microseconds."""
    samples = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        fn()
        samples.append((clock() - t0) / 1e3)
    return stats.describe(samples)


def count_for(seconds: float) -> tuple[int, float, float]:
    """Pure-Python busy work for ``seconds``: (iterations, elapsed s, excess s).

    ``excess`` sums how much each 1000-iteration chunk took beyond the run's median chunk:
    time the loop stood still (another thread held the GIL, or the OS ran something else),
    judged against the same run, so it does not drift with clock speed between runs.
    """
    clock = time.perf_counter
    durations: list[float] = []
    start = prev = clock()
    deadline = start + seconds
    n = 0
    while prev < deadline:
        n = 0
        for _ in range(1000):
            n += 1
        now = clock()
        durations.append(now - prev)
        prev = now
    typical = stats.median(durations)
    excess = sum(d - typical for d in durations if d > typical)
    return len(durations) * n, prev - start, excess


def gil_rounds(mon: nbgpumon.Monitor, rounds: int, seconds: float) -> list[dict[str, float]]:
    """Interleaved runs of the counting loop with the sampler stopped and at 100 Hz."""
    sampler = mon._session.sampler
    sampler.set_interval(GIL_INTERVAL)
    sampler._next = dict.fromkeys(sampler._next, 0.0)  # natural cadence from here
    sampler._soonest = 0.0
    count_for(min(seconds, 0.5))  # warm the loop up
    out = []
    for r in range(rounds):
        run: dict[str, float] = {}
        for state in ("off", "on") if r % 2 == 0 else ("on", "off"):
            gc.collect()
            if state == "on":
                mon.start()
                time.sleep(0.05)  # the thread is up and ticking
                ticks0 = sampler.ticks
                count, elapsed, excess = count_for(seconds)
                run["ticks"] = sampler.ticks - ticks0
                mon.stop()
            else:
                count, elapsed, excess = count_for(seconds)
            run[f"rate_{state}"] = count / elapsed
            run[f"elapsed_{state}"] = elapsed
            run[f"excess_{state}"] = excess
        ratio = run["rate_on"] / run["rate_off"]
        ticks, elapsed = run["ticks"], run["elapsed_on"]
        extra = run["excess_on"] - run["excess_off"] * elapsed / run["elapsed_off"]
        run["ratio"] = ratio
        run["tick_hz"] = ticks / elapsed
        run["stolen_us_per_tick"] = (1.0 - ratio) * elapsed / ticks * 1e6 if ticks else math.nan
        run["stall_us_per_tick"] = extra / ticks * 1e6 if ticks else math.nan
        out.append(run)
    return out


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("tick_cost", args)
    n_ticks, rounds, seconds = args.ticks, args.rounds, args.seconds
    if args.quick:
        n_ticks, rounds, seconds = 300, 5, 0.3

    held = cuda_setup.hold_gpu_tensors(result, "allocator reads (CUDA)")

    mon = nbgpumon.Monitor()  # not started: part 1 ticks it from here
    n_gpu = len(mon._session.device_source.devices)
    per = max(n_gpu, 1)
    scope = "per GPU" if n_gpu else "whole tick, 0 GPUs (host only)"
    if not n_gpu:
        result.skip("NVML reads", mon._session.device_source.status)
    result.details.update(
        gpus=n_gpu,
        nvml_status=mon._session.device_source.status,
        torch_allocator_status=mon._session.allocator("torch").status,
        columns=len(mon.timeline.columns),
        tensors_held=len(held),
    )

    # -- part 1: direct ticks -----------------------------------------------------------
    sampler = mon._session.sampler
    time_ticks(sampler, 20, "allocator")  # one-time work (CUDA UUID mapping), warm caches
    time_ticks(sampler, 5, "slow")
    direct: dict[str, dict[str, dict[str, float]]] = {}
    modes = {
        "fast": n_ticks,
        "detail": n_ticks,
        "allocator": n_ticks,
        "slow": min(n_ticks, 500),
    }
    for mode, n in modes.items():
        if mode == "allocator" and not mon._session.allocator("torch").active():
            result.skip("ticks with allocator reads", mon._session.allocator("torch").status)
            continue
        gc.collect()
        wall, cpu = time_ticks(sampler, n, mode)
        direct[mode] = {"wall_us": stats.describe(wall), "cpu_us": stats.describe(cpu)}
        w, c = direct[mode]["wall_us"], direct[mode]["cpu_us"]
        result.log(
            f"{mode} tick: wall median {w['median']:.1f} µs p99 {w['p99']:.1f}, "
            f"thread CPU median {c['median']:.1f} µs ({n} ticks, {n_gpu} GPU)"
        )
        result.add(
            f"direct {mode} tick, wall median ({scope})",
            w["median"] / per,
            "µs",
            note=f"p90 {w['p90'] / per:.1f}, p99 {w['p99'] / per:.1f}, "
            f"thread CPU median {c['median'] / per:.1f} µs; wall bounds the GIL held from above",
        )
    result.details["direct"] = direct
    if sampler.error:
        result.details["sampler_error"] = sampler.error

    # what a fast tick is made of
    components: dict[str, dict[str, float]] = {
        "nvml.read(fast)": time_call(
            partial(mon._session.device_source.read, frozenset({FAST})), 500
        ),
        "nvml.read(fast + detail)": time_call(
            partial(mon._session.device_source.read, frozenset({FAST, DETAIL})), 500
        ),
        "host.rss()": time_call(mon._session.host.rss, 500),
    }
    scratch = Timeline(mon.timeline.columns)  # same width, so the real one stays as it was
    row = [1.0] * len(mon.timeline.columns)
    components["timeline.append()"] = time_call(lambda: scratch.append(time.time(), row), 500)
    for device in mon._session.device_source.devices:
        if device.cuda_index is not None and mon._session.allocator("torch").active():
            index = device.cuda_index
            components[f"torch.read({index})"] = time_call(
                partial(mon._session.allocator("torch").read, index), 500
            )
    result.details["components_us"] = components
    for name, d in components.items():
        result.log(f"  {name}: median {d['median']:.1f} µs")

    # -- part 2: GIL taken from a busy main thread ----------------------------------------
    result.log(f"GIL test: {rounds} rounds x 2 runs of {seconds:g} s, sampler at 100 Hz")
    runs = gil_rounds(mon, rounds, seconds)
    mon.close()
    stolen = [r["stolen_us_per_tick"] for r in runs if not math.isnan(r["stolen_us_per_tick"])]
    result.details["gil_runs"] = runs
    result.details["switch_interval_s"] = sys.getswitchinterval()
    low, high = stats.bootstrap_ci(stolen)
    hz = stats.median([r["tick_hz"] for r in runs])
    ratio = stats.median([r["ratio"] for r in runs])
    result.add(
        f"GIL time taken per tick ({scope}), sampler at 100 Hz",
        stats.median(stolen) / per,
        "µs",
        TARGET_US,
        ci=(low / per, high / per),
        note=f"95% CI {low / per:.1f}..{high / per:.1f}; loop throughput x{ratio:.4f} "
        f"with sampler on; {len(runs)} rounds",
    )
    stall = [r["stall_us_per_tick"] for r in runs if not math.isnan(r["stall_us_per_tick"])]
    s_low, s_high = stats.bootstrap_ci(stall)
    result.add(
        f"main-thread stall per tick ({scope}), within-run estimate",
        stats.median(stall) / per,
        "µs",
        TARGET_US,
        ci=(s_low / per, s_high / per),
        note=f"95% CI {s_low / per:.1f}..{s_high / per:.1f}; 1000-iteration chunks' time "
        "beyond the run's median, sampler on minus off",
    )
    result.add(
        "ticks achieved with a busy main thread (asked 100 Hz)",
        hz,
        "Hz",
        note="below 100: each GIL re-acquire waits up to the switch interval",
    )
    del held
    result.finish()


if __name__ == "__main__":
    main()
