"""The sampler's share of a core while this kernel has 8 children alive (target <= 0.5% at
the defaults), against the same session with none.

A Monitor samples at its defaults for ``--seconds``: first with ``--children`` child
processes alive (started before it, each settled), then with none (they are killed). Where
torch can use a GPU, each child holds a CUDA context and a tensor, so the GPUs' process lists
hold them and the process source reads the lists (and, every 8 s, the per-process
utilization). On a machine without a GPU the process source scans nothing (there is no GPU
to charge a child with), so the figures are the sampler's without it. The figure is the
sampler's own CPU time over the wall time it ran (``cost_report()``); the process source's
scans, and its two driver calls timed alone, are given apart.

    python bench/children_share.py --out DIR [--quick] [--seconds S] [--children N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import cuda_setup
import result_file

import nbgpumon
from nbgpumon._sources.processes.source import NEW_CHILD
from nbgpumon._views.status.sampler_cost import cost_line

TARGET = 0.5  # % of a core at the defaults, 8 children alive (issue 30)
ON_GPU = (
    "import sys, time, torch\n"
    "x = torch.ones(2**20, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "print('ready', flush=True)\n"
    "time.sleep(float(sys.argv[1]))\n"
)
SLEEPS = "import sys, time\nprint('ready', flush=True)\ntime.sleep(float(sys.argv[1]))\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=30.0, help="sampling time per case")
    parser.add_argument("--children", type=int, default=8)


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("children_share", args)
    seconds = 3.0 if args.quick else args.seconds
    held = cuda_setup.hold_gpu_tensors(result, "children on the GPU")
    script = ON_GPU if held else SLEEPS
    # The children start before the Monitor: 8 CUDA contexts coming up at once keep the
    # driver busy for seconds, and the fast tick's GIL-keeping calls would give up (their own
    # rule), a cost of their own that this benchmark does not measure.
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(3 * seconds + 180)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.children)
    ]
    pids = {child.pid for child in children}
    mon = None
    began = time.monotonic()
    try:
        ready = sum(child.stdout.readline().strip() == "ready" for child in children)
        result.log(f"{ready} of {len(children)} children ready in {time.monotonic() - began:.1f} s")
        mon = nbgpumon.Monitor()
        mon.start()  # (a Monitor made outside IPython samples once started)
        session = mon._session
        result.details.update(gpus=len(session.device_source.devices), children_on_gpu=bool(held))
        follows = bool(session.device_source.devices)  # (no GPU: the tree is not scanned)
        _wait_for_children(result, session, pids if follows else set(), held)
        _measure(result, mon, len(children), seconds)
        _time_list_calls(result, session.device_source, len(children))
        for child in children:
            child.kill()
            child.wait()
        _wait_for_children(result, session, set(), held, gone=pids if follows else set())
        _measure(result, mon, 0, seconds)
    finally:
        for child in children:
            child.kill()
            child.wait()
        if mon is not None:
            mon.close()
    del held
    result.finish()


def _measure(result, mon, n: int, seconds: float) -> None:
    """The sampler's share of a core over ``seconds``, with ``n`` children alive."""
    session = mon._session
    mon.stop()
    source = session.process_source
    scans0, cpu0 = source.scans, source.cpu_ns
    mon.start()  # the accounting starts again with the thread
    time.sleep(seconds)
    report = session.sampler.cost_report()
    scans, cpu = source.scans - scans0, source.cpu_ns - cpu0
    per_scan = cpu / scans / 1e3 if scans else 0.0
    result.log(cost_line(report))
    on_gpu = sum(1 for p in source.processes if p.is_child)
    result.add(
        f"sampler thread, defaults, {n} children alive ({on_gpu} on a GPU)",
        report.core_share * 100,
        "% of a core",
        TARGET if n else None,
        note=f"{report.ticks} ticks in {report.seconds:.1f} s; {scans} process scans, "
        f"{per_scan:.0f} µs CPU each ({cpu / 1e7 / report.seconds:.3f}% of a core); "
        f"{report.device_calls_per_second:.0f} NVML calls/s",
    )
    result.details[f"{n} children"] = {
        "core_share": report.core_share,
        "children_on_gpu": on_gpu,
        "line": cost_line(report),
        "process_scans": scans,
        "process_scan_cpu_us": per_scan,
        # a slow spell of the driver's (its fast calls given back their GIL release) shows here
        "nvml_notes": list(getattr(getattr(session.device_source, "library", None), "notes", [])),
        "groups": {
            name: {"ticks": g.ticks, "cpu_us_per_tick": g.cpu_per_tick * 1e6}
            for name, g in report.groups.items()
        },
    }


def _time_list_calls(result, devices, n: int, calls: int = 200) -> None:
    """What one read of the GPUs' process list and of the per-process utilization costs this
    thread, with ``n`` children listed (the process source's two driver calls)."""
    if not devices.available:
        return
    for name, call in (
        ("process list", devices.read_processes),
        ("per-process utilization", devices.read_process_utilization),
    ):
        call()
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(calls):
            call()
        cpu = (time.thread_time_ns() - cpu) / calls / 1e3
        wall = (time.perf_counter_ns() - wall) / calls / 1e3
        result.add(
            f"one read of the {name}, {n} children listed",
            cpu,
            "µs CPU",
            None,
            note=f"{wall:.0f} µs wall, mean of {calls}",
        )


def _wait_for_children(
    result,
    session,
    pids: set[int],
    on_gpu: bool,
    gone: frozenset[int] | set[int] = frozenset(),
    timeout: float = 60.0,
) -> None:
    """Until the process source follows each of ``pids``, settled (older than its first
    seconds, when the lists are read at every scan) and, on a GPU, listed there; and none of
    ``gone``. Said in the log either way: a wait that ran out is measured all the same."""
    source = session.process_source
    began = time.monotonic()
    while True:
        runs = dict(source.runs)
        settled = all(time.time() - runs[pid].started >= NEW_CHILD for pid in pids & runs.keys())
        listed = {p.pid for p in source.processes if p.is_child}
        missing = pids - runs.keys() if not on_gpu else pids - (runs.keys() & listed)
        left = gone & runs.keys()
        if not missing and settled and not left:
            result.log(f"{len(pids)} children followed after {time.monotonic() - began:.1f} s")
            return
        if time.monotonic() - began > timeout:
            result.log(
                f"after {timeout:.0f} s: {len(missing)} children not followed, "
                f"{len(left)} not let go; measured as they are"
            )
            return
        time.sleep(0.1)


if __name__ == "__main__":
    main()
