"""Slowdown of a launch-bound training loop while nbgpumon samples.

An nn.Sequential of 8 x (Linear(256, 256) + ReLU), batch 64, SGD: each step is dozens of tiny
kernel launches, so the loop is bound by Python and the launch path, which is where a sampler
thread holding the GIL would show. For each setting (monitor at its default interval, monitor at
100 Hz, and a naive 100 Hz sampler for reference) it runs interleaved pairs of the same number
of steps without and with sampling, alternating which goes first, and reports the median time
ratio with/without. One Monitor serves the whole script; it is started and stopped around runs.
"""

from __future__ import annotations

import argparse
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

import result_file
import stats
import torch
from torch import nn

import nbgpumon

FAST_INTERVAL = 0.01


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=16, help="without/with pairs per setting")
    parser.add_argument("--seconds", type=float, default=2.0, help="target length of one run")


class NaiveSampler:
    """What a quick monitor would do: every tick, torch.cuda.memory_stats() and NVML reads."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handles: list[Any] = []
        self.nvml_status = "ok"
        try:
            import pynvml

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._nvml = pynvml
        except Exception as exc:
            self.nvml_status = f"NVML unavailable: {exc}"

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="naive-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()

    def _run(self) -> None:
        devices = range(torch.cuda.device_count()) if torch.cuda.is_available() else range(0)
        nvml, handles = self._nvml, self._handles
        next_tick = time.monotonic()
        while True:
            for i in devices:
                torch.cuda.memory_stats(i)  # the flattening one
            if nvml is not None:
                for handle in handles:
                    nvml.nvmlDeviceGetMemoryInfo(handle)
                    nvml.nvmlDeviceGetUtilizationRates(handle)
            self.ticks += 1
            next_tick += self.interval
            delay = next_tick - time.monotonic()
            if delay < 0:
                next_tick, delay = time.monotonic(), 0.0
            if self._stop.wait(delay):
                return


def build_step(device: torch.device) -> Callable[[], None]:
    layers: list[nn.Module] = []
    for _ in range(8):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    x = torch.randn(64, 256, device=device)
    y = torch.randn(64, 256, device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def timed_run(step: Callable[[], None], steps: int, sync: Callable[[], None]) -> float:
    """Seconds for ``steps`` steps, from an idle device to an idle device."""
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return time.perf_counter() - start


def measure_pairs(
    step: Callable[[], None],
    steps: int,
    sync: Callable[[], None],
    pairs: int,
    start: Callable[[], None],
    stop: Callable[[], None],
) -> list[dict[str, float]]:
    """``pairs`` (without, with) runs, alternating which goes first."""
    out = []
    for p in range(pairs):
        pair: dict[str, float] = {}
        for state in ("without", "with") if p % 2 == 0 else ("with", "without"):
            gc.collect()
            if state == "with":
                start()
                time.sleep(0.02)  # the thread is up
            pair[state] = timed_run(step, steps, sync)
            if state == "with":
                stop()
        pair["ratio"] = pair["with"] / pair["without"]
        out.append(pair)
    return out


def _nothing() -> None:
    pass


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("training_loop", args)
    pairs, seconds = args.pairs, args.seconds
    on_gpu = torch.cuda.is_available()
    if args.quick:
        pairs, seconds = 3, 0.3
    if on_gpu:
        device = torch.device("cuda", 0)
        torch.cuda.init()

        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")
        result.skip("CUDA training loop", "torch.cuda.is_available() is False")
        result.log("running on the CPU instead: a smoke test, the ratios mean nothing")

        def sync() -> None:
            pass

    step = build_step(device)
    for _ in range(20):
        step()
    probe = max(1, int(0.5 / max(timed_run(step, 20, sync) / 20, 1e-6)))
    per_step = timed_run(step, probe, sync) / probe
    steps = max(10, round(seconds / per_step))
    result.log(f"{per_step * 1e3:.3f} ms/step on {device}; {steps} steps per run, {pairs} pairs")
    where = "" if on_gpu else " (CPU, NOT MEANINGFUL)"

    mon = nbgpumon.Monitor()
    default_interval = nbgpumon.GPUMon().interval
    mon.start()  # one-time work (UUID mapping, first slow reads) outside the measurements
    time.sleep(0.3)
    mon.stop()
    naive = NaiveSampler(FAST_INTERVAL)
    if naive.nvml_status != "ok":
        result.skip("naive sampler's NVML reads", naive.nvml_status)

    def set_interval(seconds: float) -> Callable[[], None]:
        def start() -> None:
            mon.config.interval = seconds  # through the config, as %config would
            mon.start()

        return start

    settings: list[tuple[str, str, Callable[[], None], Callable[[], None]]] = [
        (
            "default",
            f"nbgpumon at its default interval ({default_interval:g} s)",
            set_interval(default_interval),
            mon.stop,
        ),
        ("100hz", "nbgpumon at 100 Hz", set_interval(FAST_INTERVAL), mon.stop),
        ("naive_100hz", "naive sampler at 100 Hz (reference)", naive.start, naive.stop),
        # A/A control: nothing differs between the two runs of a pair, so its spread is the
        # machine's noise floor, the resolution the other rows can claim.
        ("control", "no sampler in either run (noise floor)", _nothing, _nothing),
    ]
    targets = {"default": 0.5, "100hz": 2.0}
    details: dict[str, Any] = {
        "device": str(device),
        "ms_per_step": per_step * 1e3,
        "steps_per_run": steps,
        "gpus_seen_by_monitor": len(mon.nvml.devices),
        "monitor_allocator_status": mon.torch.status,
    }
    for key, label, start, stop in settings:
        ticks0 = mon.sampler.ticks + naive.ticks
        runs = measure_pairs(step, steps, sync, pairs, start, stop)
        ticks = mon.sampler.ticks + naive.ticks - ticks0
        seconds_with = sum(r["with"] for r in runs)
        ratios = [r["ratio"] for r in runs]
        ratio = stats.median(ratios)
        low, high = stats.bootstrap_ci(ratios)
        details[key] = {
            "label": label,
            "pairs": runs,
            "median_ratio": ratio,
            "ci95": [low, high],
            "min": min(ratios),
            "max": max(ratios),
            "ticks_per_second_with": ticks / seconds_with,
        }
        result.log(
            f"{label}: x{ratio:.4f} (95% CI {low:.4f}..{high:.4f}, "
            f"{ticks / seconds_with:.0f} ticks/s)"
        )
        result.add(
            f"slowdown, {label}{where}",
            (ratio - 1.0) * 100.0,
            "%",
            target=targets.get(key),
            ci=((low - 1.0) * 100.0, (high - 1.0) * 100.0),
            note=f"median time ratio x{ratio:.4f}, 95% CI x{low:.4f}..x{high:.4f}, "
            f"range x{min(ratios):.4f}..x{max(ratios):.4f}, {len(runs)} pairs of {steps} steps",
        )
    mon.close()
    naive.close()
    result.details.update(details)
    result.finish()


if __name__ == "__main__":
    main()
