"""A fast tick's Python steps around NVML, on any machine (no GPU needed).

NVML's C calls are replaced by a C function that costs nanoseconds (libc's ``sigemptyset``:
returns 0 and writes only its first argument, which is the "device handle" here, a buffer);
the real nvidia-ml-py binding and nbgpumon do everything else as on a GPU, the binding's calls
releasing the GIL as they do there. Part 1 ticks directly (wall, thread CPU, ``NvmlSource.read``
of the fast cadence); part 2 runs the sampler at 100 Hz, fast reads only, beside a busy
pure-Python main thread, alternating with runs where it is stopped: its fast ticks' wall and
CPU time from its own accounting, NVML's wall time per read, and the main loop's throughput
with the sampler on over off. Compare two checkouts by running this with each on PYTHONPATH.

    python bench/tick_steps.py --out DIR [--quick]
"""

from __future__ import annotations

import gc
import math
import statistics
import time

import result_file
import stub_nvml

import nbgpumon


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0])
    result = result_file.Result("tick_steps", args)
    rounds, ticks, busy_seconds = (2, 500, 0.5) if args.quick else (5, 2000, 2.0)
    try:
        pynvml = stub_nvml.stubbed_binding()
    except ImportError as exc:
        result.skip("everything", f"nvidia-ml-py not importable ({exc})")
        result.finish()
        return

    mon = nbgpumon.Monitor(nvml_module=pynvml)
    mon.config.idle_interval = 0  # (every tick at the interval: what a tick costs)
    lib = mon._session.device_source.library
    s = mon._session.sampler

    def fast_only():
        for c in s._next:
            s._next[c] = math.inf
        s._soonest = math.inf

    fast_only()
    for _ in range(300):
        s.tick()
    pc, tt = time.perf_counter_ns, time.thread_time_ns
    w, c, n = [], [], []
    fast = frozenset({"fast"})
    for _ in range(rounds):
        gc.collect()
        ww, cc, nn = [], [], []
        for _ in range(ticks):
            c0, w0 = tt(), pc()
            s.tick()
            w1, c1 = pc(), tt()
            ww.append(w1 - w0)
            cc.append(c1 - c0)
        for _ in range(ticks):
            w0 = pc()
            mon._session.device_source.read(fast)
            nn.append(pc() - w0)
        w.append(statistics.median(ww) / 1e3)
        c.append(statistics.median(cc) / 1e3)
        n.append(statistics.median(nn) / 1e3)
    out = {
        "direct_tick_wall_us": statistics.median(w),
        "direct_tick_cpu_us": statistics.median(c),
        "nvml_read_fast_us": statistics.median(n),
    }
    # part 2: 100 Hz beside a busy main thread, fast ticks only
    s.interval = 0.01

    def busy(seconds):
        end = time.perf_counter() + seconds
        k = 0
        while time.perf_counter() < end:
            for _ in range(1000):
                k += 1
        return k

    busy(0.3)
    rates = {}
    for state in ("off", "on", "off", "on"):
        if state == "on":
            s.start()
            fast_only()
            t = time.monotonic() + 5
            while s.ticks < 5 and time.monotonic() < t:
                time.sleep(0.001)
            s.cost.reset()
        k = busy(busy_seconds)
        if state == "on":
            rep = s.cost_report()
            s.stop()
            g = rep.groups["fast"]
            out.setdefault("busy_fast_tick_wall_us", []).append(round(g.wall_per_tick * 1e6, 1))
            out.setdefault("busy_fast_tick_cpu_us", []).append(round(g.cpu_per_tick * 1e6, 1))
            out.setdefault("busy_nvml_wall_us", []).append(
                round(rep.sources["nvml"].wall_per_tick * 1e6, 1)
            )
            out.setdefault("busy_ticks_per_s", []).append(round(rep.ticks / rep.seconds, 1))
        rates.setdefault(state, []).append(k / busy_seconds)
    out["main_loop_ratio_on_off"] = round(
        statistics.mean(rates["on"]) / statistics.mean(rates["off"]), 4
    )
    out["kept"] = list(getattr(lib, "gil_kept", ()))
    out["err"] = s.error
    mon.close()
    result.details.update(out)
    result.add(
        "direct fast tick, wall median",
        out["direct_tick_wall_us"],
        "µs",
        note=f"thread CPU {out['direct_tick_cpu_us']:.1f} µs; NvmlSource.read(fast) "
        f"{out['nvml_read_fast_us']:.1f} µs; NVML calls keeping the GIL: {out['kept']}",
    )
    result.add(
        "NVML wall per fast read, 100 Hz beside a busy main thread",
        statistics.median(out["busy_nvml_wall_us"]),
        "µs",
        note=f"runs {out['busy_nvml_wall_us']}; fast tick wall {out['busy_fast_tick_wall_us']}, "
        f"CPU {out['busy_fast_tick_cpu_us']} µs; {out['busy_ticks_per_s']} ticks/s",
    )
    result.add("busy main loop's throughput, sampler on / off", out["main_loop_ratio_on_off"], "x")
    result.finish()


if __name__ == "__main__":
    main()
