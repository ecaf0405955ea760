"""A running sampler's fast tick, by its thread's own CPU clock (target <= 60 µs per GPU at
10 Hz and 100 Hz), with where that CPU goes; and its share of a core at the defaults'
cadences (targets: <= 0.5% at 10 Hz, <= 1.5% at 100 Hz).

A real Monitor samples on its own thread. Its CPU time is read from outside the thread
(``time.pthread_getcpuclockid(thread.ident)``, a clock of that thread's only) at the start and
end of each run and divided by the ticks it made, so the figure holds everything the thread
does: its reads, the timeline's append, its own cost accounting, its subscribers and its wait
and wake-up. Three runs per interval:

- ``fast``: only fast ticks (the slower cadences pushed out of the run): the fast tick's CPU;
- ``steps``: the same, each step wrapped in a ``time.thread_time_ns`` pair (each source's
  read, the timeline's append, the cost accounting, the subscribers, the wait), for the
  breakdown; what the steps leave of the ``fast`` figure is the tick's own loop (``rest``);
- ``cadences``: every cadence at the defaults' intervals: the share of a core.

The main thread sleeps, or with ``--train`` runs bench/training_loop.py's launch-bound loop
(torch; on CUDA where there is a GPU). NVML: the installed binding (``--nvml real``, no GPU:
no NVML, host only), tests/fake_nvml's (``--nvml fake --gpus N``), whose "C" calls are
ctypes callbacks into Python and so cost far more than NVML's, or the real binding with
NVML's C calls made nearly free (``--nvml stub --gpus N``, stub_nvml.py): the Python around
them, as on a GPU.

    python bench/tick_cpu.py --out DIR [--quick] [--seconds S] [--nvml real|fake|stub] [--gpus N]
        [--train]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import result_file

INTERVALS = {"10 Hz": 0.1, "100 Hz": 0.01}
FAST_TARGET_US = 60.0  # per GPU (issue 23)
SHARE_TARGETS = {"10 Hz": 0.5, "100 Hz": 1.5}  # % of a core
FAKE_NVML = Path(__file__).resolve().parent.parent / "tests" / "fake_nvml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--nvml", choices=("real", "fake", "stub"), default="real")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs of the fake or stub NVML")
    parser.add_argument("--train", action="store_true", help="the training loop meanwhile")


class Steps:
    """Each step of a tick wrapped in a thread CPU clock pair: step name -> [calls, CPU ns]."""

    def __init__(self) -> None:
        self.spent: dict[str, list[int]] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attribute: str, step: str) -> None:
        inner = getattr(owner, attribute)
        entry = self.spent.setdefault(step, [0, 0])
        clock = time.thread_time_ns

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return inner(*args, **kwargs)
            finally:
                entry[0] += 1
                entry[1] += clock() - start

        setattr(owner, attribute, timed)
        self._undo.append(lambda: owner.__dict__.pop(attribute, None))

    def wrap_lock(self, owner: Any, attribute: str, step: str) -> None:
        """``owner.attribute``, a lock, replaced by one whose ``acquire`` is timed."""
        lock = getattr(owner, attribute)
        entry = self.spent.setdefault(step, [0, 0])
        clock = time.thread_time_ns

        class TimedLock:
            def acquire(self, *args: Any, **kwargs: Any) -> bool:
                start = clock()
                try:
                    return lock.acquire(*args, **kwargs)
                finally:
                    entry[0] += 1
                    entry[1] += clock() - start

            def release(self) -> None:
                lock.release()

        setattr(owner, attribute, TimedLock())
        self._undo.append(lambda: setattr(owner, attribute, lock))

    def undo(self) -> None:
        for undo in self._undo:
            undo()
        self._undo.clear()

    def per_tick_us(self, ticks: int) -> dict[str, float]:
        return {name: ns / 1e3 / max(ticks, 1) for name, (_, ns) in self.spent.items()}


def wrapper_cost_us() -> float:
    """What one wrapped call adds to its step: a wrapped no-op, timed the same way."""
    holder = type("Holder", (), {"nothing": staticmethod(lambda: None)})()
    steps = Steps()
    steps.wrap(holder, "nothing", "nothing")
    for _ in range(20_000):
        holder.nothing()
    calls, ns = steps.spent["nothing"]
    return ns / calls / 1e3


def wrap_steps(sampler: Any) -> Steps:
    steps = Steps()
    for source in sampler.sources:
        steps.wrap(source, "read", f"read: {source.name}")
    steps.wrap(sampler.timeline, "append", "timeline append")
    cost = sampler.cost
    for name in ("tick_read", "reads_took", "subscribers_ran", "clock"):  # (clock: before)
        if hasattr(cost, name):
            steps.wrap(cost, name, "cost accounting")
    if isinstance(sampler._wake, threading.Event):  # (the code before issue 23)
        steps.wrap(sampler._wake, "wait", "wait and wake")
    else:  # a held lock, its timed acquire the wait
        steps.wrap_lock(sampler, "_wake", "wait and wake")
    return steps


def push_out_slow_cadences(sampler: Any) -> None:
    with sampler._lock:  # (a tick works out what is due under it)
        for cadence in sampler._next:
            sampler._next[cadence] = math.inf
        sampler._soonest = math.inf


def run(mon: Any, interval: float, seconds: float, mode: str, work: Callable[[float], int]):
    """One run: (thread CPU ns, ticks, wall s, steps or None, the in-thread report, work)."""
    sampler = mon._session.sampler
    mon.stop()
    mon.config.interval = interval
    mon.start()
    if not sampler.wait_for_first_tick(30.0):
        raise RuntimeError(f"no tick within 30 s: {sampler.error}")
    if mode != "cadences":
        push_out_slow_cadences(sampler)
    steps = wrap_steps(sampler) if mode == "steps" else None
    settle = sampler.ticks + 5
    deadline = time.monotonic() + 10
    while sampler.ticks < settle and time.monotonic() < deadline:
        time.sleep(interval)
    clock = time.pthread_getcpuclockid(sampler._thread.ident)
    if steps is not None:
        for entry in steps.spent.values():
            entry[:] = [0, 0]
    sampler.cost.reset()
    cpu0, ticks0, wall0 = time.clock_gettime_ns(clock), sampler.ticks, time.perf_counter()
    done = work(seconds)
    cpu1, ticks1, wall1 = time.clock_gettime_ns(clock), sampler.ticks, time.perf_counter()
    report = sampler.cost_report()
    if steps is not None:
        steps.undo()
    mon.stop()
    return cpu1 - cpu0, ticks1 - ticks0, wall1 - wall0, steps, report, done


def sleeper(seconds: float) -> int:
    time.sleep(seconds)
    return 0


def trainer() -> tuple[Callable[[float], int], str]:
    """The training loop for ``seconds`` (returns the steps run), and where it runs."""
    import torch
    import training_loop

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    step = training_loop.build_step(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(20):
        step()
    sync()

    def work(seconds: float) -> int:
        end, n = time.perf_counter() + seconds, 0
        while time.perf_counter() < end:
            for _ in range(10):
                step()
            n += 10
        sync()
        return n

    return work, str(device)


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.nvml == "fake":
        devices = [{"name": f"Fake GPU {i}"} for i in range(args.gpus)]
        os.environ["NBGPUMON_FAKE_NVML"] = json.dumps({"devices": devices})
        sys.path.insert(0, str(FAKE_NVML))
    import cuda_setup
    import stub_nvml

    import nbgpumon
    from nbgpumon._views.status.sampler_cost import cost_line

    result = result_file.Result("tick_cpu", args)
    seconds = 2.0 if args.quick else args.seconds
    held: list[Any] = []
    work, where = sleeper, "the main thread sleeping"
    if args.train:
        held = cuda_setup.hold_gpu_tensors(result, "allocator reads")
        work, device = trainer()
        where = f"the training loop on {device}"
    elif args.nvml != "fake":
        held = cuda_setup.hold_gpu_tensors(result, "allocator reads")
    module = stub_nvml.stubbed_binding(args.gpus) if args.nvml == "stub" else None
    mon = nbgpumon.Monitor(nvml_module=module)
    mon.config.idle_interval = 0  # (every tick at the interval: what a tick costs)
    gpus = len(mon._session.device_source.devices)
    per = max(gpus, 1)
    result.details.update(
        gpus=gpus, nvml=args.nvml, nvml_status=mon._session.device_source.status,
        torch=mon._session.allocator("torch").status, meanwhile=where,
        wrapper_cost_us=wrapper_cost_us(),
    )  # fmt: skip
    result.log(f"{gpus} GPU(s) ({args.nvml} NVML: {mon._session.device_source.status}), {where}")
    try:
        for label, interval in INTERVALS.items():
            cpu, ticks, wall, _, report, done = run(mon, interval, seconds, "fast", work)
            fast_us = cpu / 1e3 / max(ticks, 1)
            scpu, sticks, _, steps, sreport, _ = run(mon, interval, seconds, "steps", work)
            breakdown = steps.per_tick_us(sticks) if steps is not None else {}
            # the same run's total, less its steps and what wrapping them added
            calls = sum(n for n, _ in steps.spent.values()) / max(sticks, 1) if steps else 0
            wrapped_us = scpu / 1e3 / max(sticks, 1)
            breakdown["rest (the tick's own code)"] = (
                wrapped_us - sum(breakdown.values()) - calls * result.details["wrapper_cost_us"]
            )
            ccpu, cticks, cwall, _, creport, _ = run(mon, interval, seconds, "cadences", work)
            share = ccpu / 1e9 / cwall * 100
            result.log(
                f"{label}: fast tick {fast_us:.1f} µs CPU ({ticks} ticks in {wall:.1f} s); "
                + ", ".join(f"{k} {v:.1f}" for k, v in breakdown.items())
                + f"; every cadence: {share:.3f}% of a core; {cost_line(creport)}"
            )
            result.add(
                f"fast tick CPU per GPU, {label} (thread's clock)",
                fast_us / per,
                "µs",
                FAST_TARGET_US,
                note=f"{fast_us:.1f} µs a tick, {gpus} GPU(s), {ticks} ticks; in-thread "
                f"accounting {report.groups['fast'].cpu_per_tick * 1e6:.1f} µs",
            )
            result.add(
                f"sampler thread, {label}, every cadence",
                share,
                "% of a core",
                SHARE_TARGETS[label],
                note=f"{cticks} ticks in {cwall:.1f} s; in-thread accounting "
                f"{creport.core_share * 100:.3f}%",
            )
            result.details[label] = {
                "fast_tick_cpu_us": fast_us,
                "fast_ticks": ticks,
                "fast_wall_s": wall,
                "work_done": done,
                "breakdown_us_per_tick": breakdown,
                "steps_run_tick_cpu_us": wrapped_us,
                "breakdown_calls": steps.spent if steps is not None else {},
                "in_thread_fast_us": report.groups["fast"].cpu_per_tick * 1e6,
                "in_thread_steps_line": cost_line(sreport),
                "share_percent": share,
                "share_ticks": cticks,
                "share_line": cost_line(creport),
            }
    finally:
        mon.close()
    del held
    result.finish()


if __name__ == "__main__":
    main()
