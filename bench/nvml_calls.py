"""Cost of each NVML call nbgpumon makes, on this machine's driver.

For every call the sampler uses, times ``n`` calls through nvidia-ml-py: wall time and this
thread's CPU time per call (medians and p90), so DESIGN.md's table of measured costs can be
checked against the machine at hand. Calls a device doesn't support are listed as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import result_file
import stats


def add_arguments(parser: Any) -> None:
    parser.add_argument("--calls", type=int, default=300, help="calls per NVML function")


def timed(fn: Callable[[], object], n: int) -> dict[str, Any]:
    wall: list[float] = []
    cpu: list[float] = []
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    try:
        fn()
    except Exception as exc:  # NotSupported and friends: report, don't time
        return {"error": f"{type(exc).__name__}: {exc}"}
    for _ in range(n):
        c0, w0 = cpu_clock(), clock()
        fn()
        w1, c1 = clock(), cpu_clock()
        wall.append((w1 - w0) / 1e3)
        cpu.append((c1 - c0) / 1e3)
    return {"wall_us": stats.describe(wall), "cpu_us": stats.describe(cpu)}


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("nvml_calls", args)
    n = 50 if args.quick else args.calls
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        result.skip("every NVML call", f"NVML unavailable: {exc}")
        result.finish()
        return
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    calls: dict[str, Callable[[], object]] = {
        "nvmlDeviceGetMemoryInfo (v2)": lambda: pynvml.nvmlDeviceGetMemoryInfo(
            h, version=pynvml.nvmlMemory_v2
        ),
        "nvmlDeviceGetMemoryInfo (v1)": lambda: pynvml.nvmlDeviceGetMemoryInfo(h),
        "nvmlDeviceGetUtilizationRates": lambda: pynvml.nvmlDeviceGetUtilizationRates(h),
        "nvmlDeviceGetTemperature": lambda: pynvml.nvmlDeviceGetTemperature(h, 0),
        "nvmlDeviceGetPowerUsage": lambda: pynvml.nvmlDeviceGetPowerUsage(h),
        "nvmlDeviceGetClockInfo (SM)": lambda: pynvml.nvmlDeviceGetClockInfo(h, 1),
        "nvmlDeviceGetFieldValues (PCIe TX, RX)": lambda: pynvml.nvmlDeviceGetFieldValues(
            h, [197, 198]
        ),
        "nvmlDeviceGetEnforcedPowerLimit": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h),
        "nvmlDeviceGetComputeRunningProcesses": lambda: pynvml.nvmlDeviceGetComputeRunningProcesses(
            h
        ),
        "nvmlDeviceGetSamples (GPU utilization)": lambda: pynvml.nvmlDeviceGetSamples(h, 1, 0),
    }
    per_call: dict[str, Any] = {}
    for name, fn in calls.items():
        per_call[name] = got = timed(fn, n)
        if "error" in got:
            result.log(f"{name}: {got['error']}")
            continue
        w, c = got["wall_us"], got["cpu_us"]
        result.log(f"{name}: wall median {w['median']:.1f} µs, thread CPU {c['median']:.1f} µs")
        result.add(
            f"{name}, wall median",
            w["median"],
            "µs",
            note=f"p90 {w['p90']:.1f}; thread CPU median {c['median']:.1f} µs",
        )
    result.details["calls"] = per_call
    pynvml.nvmlShutdown()
    result.finish()


if __name__ == "__main__":
    main()
