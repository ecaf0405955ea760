"""Slowdown of a launch-bound training loop while nbgpumon samples: a rotated A/B in one process.

The loop: nn.Sequential of 8 x (Linear(256, 256) + ReLU), batch 64, SGD, on CUDA when there is a
GPU (the CPU otherwise: a smoke run). Each step is dozens of tiny kernel launches, so the loop is
bound by Python and the launch path, which is where a sampler thread taking the GIL or calling
the driver would show.

One round runs every arm once, each for ``--steps`` steps with the device synchronized at both
ends, in an order shuffled every round (fixed seed). Arms: ``off`` (no sampler: the baseline),
``aa`` (no sampler again: the A/A control, whose spread is the noise floor), ``defaults``
(nbgpumon.Monitor at its defaults), ``100hz`` (interval 0.01), three 100 Hz ablations (only the
fast reads; fast + allocator; fast + detail, which holds the PCIe field read), and a naive
100 Hz sampler for reference. An arm's figure is the median over rounds of (arm time / ``off``
time in the same round), with a bootstrap 95% interval. Beside it, each sampler's own
accounting (``Sampler.cost_report()``): the sampler thread's CPU time over the time it ran.

Each sampler arm has its own Monitor, started just before its timed run and stopped just after
it, so no thread exists outside its arm and each keeps its own cadence schedule. The first tick
after a start reads every cadence that fell due while it was stopped (all of them, a round
being longer than the slow interval): the timing starts after that first tick, so a timed run
holds the ticks of a session under way, mostly fast ones, and the slower cadences' cost is in
the accounting (the share at the configured cadences: each class's CPU per tick times its
steady rate). ``--from-start`` times from the thread's start instead, first tick included, as
earlier runs did (an upper bound: about 3 ms of reads and a thread start per 141 ms run).

    python bench/training_loop.py --out DIR [--rounds N] [--steps N] [--budget S] [--quick]
        [--from-start]
"""

from __future__ import annotations

import argparse
import gc
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import result_file
import stats
import torch
from torch import nn

import nbgpumon

FAST_INTERVAL = 0.01
OUT_OF_THE_WAY = 60.0  # seconds: a cadence pushed out of a run (GPUMon's maximum interval)
SEED = 13
CLASSES = ("fast", "allocator", "detail", "slow")  # a tick is named by its slowest read


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=300, help="rounds (each arm once a round)")
    parser.add_argument("--steps", type=int, default=60, help="training steps per arm run")
    parser.add_argument(
        "--from-start",
        action="store_true",
        help="time each sampler arm from its thread's start (its first tick reads every "
        "cadence at once) instead of from after that first tick",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=420.0,
        help="seconds for the rounds; fewer rounds run when they would take longer",
    )


@dataclass
class RunCost:
    """What one sampler's thread took during one arm run."""

    cpu_seconds: float  # its thread's CPU time in its ticks
    on_seconds: float = 0.0  # from just before its start to just after its stop
    ticks: dict[str, int] = field(default_factory=dict)  # by class
    cpu_by_class: dict[str, float] = field(default_factory=dict)  # seconds
    nvml_calls: int = 0
    source_reads: dict[str, tuple[int, float]] = field(default_factory=dict)  # reads, wall s


@dataclass
class Arm:
    key: str
    label: str
    target: float | None = None  # % slowdown, and % of a core for its sampler
    start: Callable[[], None] = lambda: None
    stop: Callable[[], RunCost | None] = lambda: None
    settings: dict[str, float] | None = None  # GPUMon settings of a Monitor arm


class MonitorArm:
    """One nbgpumon.Monitor with its own settings, sampling only during its arm's runs."""

    def __init__(self, settings: dict[str, float], settle: bool = True) -> None:
        self.settings = settings
        self.settle = settle  # time from after the first tick (not --from-start)
        self.mon = nbgpumon.Monitor(nbgpumon.GPUMon(**settings))

    def warm_up(self) -> None:
        """The one-time work (first slow reads, the CUDA mapping) outside the measurements."""
        self.mon.start()
        time.sleep(0.3)
        self.mon.stop()

    def start(self) -> None:
        # start() resets it too; this run's figure is this run's
        self.mon._session.sampler.cost.reset()
        before = self.mon._session.sampler.ticks
        self.mon.start()
        if self.settle:  # its start and first tick (every cadence due) before the timing
            deadline = time.monotonic() + 1.0
            while self.mon._session.sampler.ticks == before and time.monotonic() < deadline:
                time.sleep(0.0005)

    def stop(self) -> RunCost:
        self.mon.stop()
        report = self.mon._session.sampler.cost_report()
        groups = report.groups
        return RunCost(
            report.cpu_seconds,
            ticks={c: groups[c].ticks for c in CLASSES if c in groups},
            cpu_by_class={c: groups[c].cpu_seconds for c in CLASSES if c in groups},
            nvml_calls=report.device_calls,
            source_reads={n: (g.ticks, g.wall_seconds) for n, g in report.sources.items()},
        )

    def steady_rates(self, seconds: float = 600.0) -> dict[str, float]:
        """Ticks per second of each class in a steady session with these settings: the
        sampler's schedule (Sampler._due) replayed on an ideal clock."""
        sampler = self.mon._session.sampler
        interval, intervals = sampler.interval, dict(sampler.intervals)
        due_at = dict.fromkeys(intervals, 0.0)
        counts = dict.fromkeys(CLASSES, 0)
        ticks = round(seconds / interval)
        for k in range(1, ticks + 1):  # from k=1: a session long started
            now = k * interval
            kind = "fast"
            for cadence in CLASSES[1:]:
                if now >= due_at[cadence] - 1e-9:
                    due_at[cadence] = now + intervals[cadence]
                    kind = cadence
            counts[kind] += 1
        return {c: n / seconds for c, n in counts.items()}


class NaiveSampler:
    """What a quick monitor would do: every tick, torch.cuda.memory_stats() and NVML reads."""

    def __init__(self, interval: float, settle: bool = True) -> None:
        self.interval = interval
        self.settle = settle
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._ticks = 0
        self._cpu_ns = 0
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
        self._ticks, self._cpu_ns = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="naive-sampler", daemon=True)
        self._thread.start()
        if self.settle:
            deadline = time.monotonic() + 1.0
            while self._ticks == 0 and time.monotonic() < deadline:
                time.sleep(0.0005)

    def stop(self) -> RunCost:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        cpu = self._cpu_ns / 1e9
        return RunCost(cpu, ticks={"fast": self._ticks}, cpu_by_class={"fast": cpu})

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()

    def _run(self) -> None:
        devices = range(torch.cuda.device_count()) if torch.cuda.is_initialized() else range(0)
        nvml, handles, stop = self._nvml, self._handles, self._stop
        next_tick = time.monotonic()
        while True:
            cpu0 = time.thread_time_ns()  # the same accounting as nbgpumon's: its reads
            for i in devices:
                torch.cuda.memory_stats(i)  # the flattening one
            if nvml is not None:
                for handle in handles:
                    nvml.nvmlDeviceGetMemoryInfo(handle)
                    nvml.nvmlDeviceGetUtilizationRates(handle)
            self._cpu_ns += time.thread_time_ns() - cpu0
            self._ticks += 1
            next_tick += self.interval
            delay = next_tick - time.monotonic()
            if delay < 0:
                next_tick, delay = time.monotonic(), 0.0
            if stop.wait(delay):
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


def run_arm(
    arm: Arm, step: Callable[[], None], steps: int, sync: Callable[[], None]
) -> tuple[float, RunCost | None]:
    """Seconds for ``steps`` steps with ``arm``'s sampler on, idle device to idle device; and
    what the sampler took. Every arm goes through the same calls."""
    gc.collect()
    sync()
    on = time.perf_counter()
    arm.start()  # (unless --from-start, returns after the sampler's first tick)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    seconds = time.perf_counter() - start
    cost = arm.stop()
    if cost is not None:
        cost.on_seconds = time.perf_counter() - on
    return seconds, cost


def pooled_share(costs: Sequence[RunCost]) -> float:
    """The sampler thread's CPU time over the time it ran, pooled over runs."""
    on = sum(c.on_seconds for c in costs)
    return sum(c.cpu_seconds for c in costs) / on if on > 0 else float("nan")


def cpu_per_tick(costs: Sequence[RunCost]) -> dict[str, float]:
    """Seconds of CPU per tick of each class seen, pooled over runs."""
    out = {}
    for k in CLASSES:
        ticks = sum(c.ticks.get(k, 0) for c in costs)
        if ticks:
            out[k] = sum(c.cpu_by_class.get(k, 0.0) for c in costs) / ticks
    return out


def steady_share(costs: Sequence[RunCost], rates: dict[str, float]) -> float:
    """Each class's CPU per tick times its rate in a steady session; a class never seen in
    the runs counts as the dearest one seen (an estimate that errs high)."""
    per_tick = cpu_per_tick(costs)
    dearest = max(per_tick.values(), default=0.0)
    return sum(rate * per_tick.get(k, dearest) for k, rate in rates.items())


def summarize_costs(costs: list[RunCost], rates: dict[str, float] | None) -> dict[str, Any]:
    on = sum(c.on_seconds for c in costs)
    ticks = {k: sum(c.ticks.get(k, 0) for c in costs) for k in CLASSES}
    reads: dict[str, list[float]] = {}
    for c in costs:
        for name, (n, wall) in c.source_reads.items():
            total = reads.setdefault(name, [0, 0.0])
            total[0] += n
            total[1] += wall
    out: dict[str, Any] = {
        "core_share_in_runs": pooled_share(costs),
        "core_share_in_runs_ci95": list(stats.bootstrap_ci(costs, statistic=pooled_share)),
        "on_seconds": on,
        "ticks": ticks,
        "ticks_per_second": {k: n / on for k, n in ticks.items()} if on > 0 else {},
        "cpu_us_per_tick": {k: v * 1e6 for k, v in cpu_per_tick(costs).items()},
        "source_wall_us_per_read": {k: w / n * 1e6 for k, (n, w) in reads.items() if n},
        "nvml_calls_per_second": sum(c.nvml_calls for c in costs) / on if on > 0 else 0.0,
    }
    if rates is not None:
        out["steady_ticks_per_second"] = rates
        out["core_share"] = steady_share(costs, rates)
        out["core_share_ci95"] = list(
            stats.bootstrap_ci(costs, statistic=lambda cs: steady_share(cs, rates))
        )
    else:  # no cadences to weigh (the naive sampler): what it took in the runs
        out["core_share"] = out["core_share_in_runs"]
        out["core_share_ci95"] = out["core_share_in_runs_ci95"]
    return out


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("training_loop", args)
    rounds, steps, budget = args.rounds, args.steps, args.budget
    if args.quick:
        rounds, steps, budget = 6, 20, 60.0
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        device = torch.device("cuda", 0)
        torch.cuda.init()

        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)  # one thread launches every op, as on the GPU path
        result.skip("CUDA training loop", "torch.cuda.is_available() is False")
        result.log("running on the CPU instead: a smoke test, the ratios mean nothing")

        def sync() -> None:
            pass

    step = build_step(device)
    for _ in range(30):
        step()
    sync()
    probe = 50 if args.quick else 300
    start = time.perf_counter()
    for _ in range(probe):
        step()
    sync()
    per_step = (time.perf_counter() - start) / probe

    monitors = {
        "defaults": {},
        "100hz": {"interval": FAST_INTERVAL},
        "100hz_fast": {
            "interval": FAST_INTERVAL,
            "allocator_interval": OUT_OF_THE_WAY,
            "detail_interval": OUT_OF_THE_WAY,
            "slow_interval": OUT_OF_THE_WAY,
        },
        "100hz_fast_allocator": {
            "interval": FAST_INTERVAL,
            "detail_interval": OUT_OF_THE_WAY,
            "slow_interval": OUT_OF_THE_WAY,
        },
        "100hz_fast_detail": {
            "interval": FAST_INTERVAL,
            "allocator_interval": OUT_OF_THE_WAY,
            "slow_interval": OUT_OF_THE_WAY,
        },
    }
    settle = not args.from_start
    samplers = {key: MonitorArm(settings, settle) for key, settings in monitors.items()}
    for sampler in samplers.values():
        sampler.warm_up()
    naive = NaiveSampler(FAST_INTERVAL, settle)
    if naive.nvml_status != "ok":
        result.skip("naive sampler's NVML reads", naive.nvml_status)
    defaults = nbgpumon.GPUMon()
    cadences = (
        f"{defaults.interval:g} s; allocator {defaults.allocator_interval:g} s, "
        f"detail {defaults.detail_interval:g} s, slow {defaults.slow_interval:g} s"
    )
    labels = {
        "defaults": f"nbgpumon at its defaults ({cadences})",
        "100hz": "nbgpumon at 100 Hz (other cadences at their defaults)",
        "100hz_fast": "nbgpumon at 100 Hz, fast reads only (others every 60 s)",
        "100hz_fast_allocator": "nbgpumon at 100 Hz, fast + allocator reads",
        "100hz_fast_detail": "nbgpumon at 100 Hz, fast + detail reads (PCIe field values)",
    }
    targets = {"defaults": 0.5, "100hz": 2.0}
    arms = [
        Arm("off", "no sampler (the baseline)"),
        Arm("aa", "no sampler, a second arm (A/A: the noise floor)"),
        *(
            Arm(key, labels[key], targets.get(key), s.start, s.stop, s.settings)
            for key, s in samplers.items()
        ),
        Arm("naive_100hz", "naive sampler at 100 Hz (reference)", None, naive.start, naive.stop),
    ]

    per_round = len(arms) * (steps * per_step + 0.005)  # + gc, sync, start and stop
    rounds_fit = max(2, int(budget / per_round))
    if rounds_fit < rounds:
        result.log(f"the budget of {budget:.0f} s fits about {rounds_fit} of {rounds} rounds")
    result.log(
        f"{per_step * 1e3:.3f} ms/step on {device}; {len(arms)} arms x {steps} steps a round, "
        f"{rounds} rounds: about {rounds * per_round:.0f} s (budget {budget:.0f} s)"
    )
    where = "" if on_gpu else " (CPU, NOT MEANINGFUL)"

    gc.collect()
    gc.freeze()  # torch's and the setup's objects: out of every per-arm gc.collect()
    rng = random.Random(SEED)
    times: list[dict[str, float]] = []
    orders: list[list[str]] = []
    costs: dict[str, list[RunCost]] = {arm.key: [] for arm in arms}
    began = time.perf_counter()
    stopped_early = ""
    every = max(1, rounds // 10)
    for r in range(rounds):
        elapsed = time.perf_counter() - began
        if r >= 2 and elapsed + elapsed / r > budget:
            stopped_early = f"stopped after {r} of {rounds} rounds: the {budget:.0f} s budget"
            result.log(stopped_early)
            break
        order = list(arms)
        rng.shuffle(order)  # no arm always follows the same one (a rotation would)
        row: dict[str, float] = {}
        for arm in order:
            seconds, cost = run_arm(arm, step, steps, sync)
            row[arm.key] = seconds
            if cost is not None:
                costs[arm.key].append(cost)
        times.append(row)
        orders.append([arm.key for arm in order])
        if (r + 1) % every == 0 or r + 1 == rounds:
            so_far = {
                key: stats.median([t[key] / t["off"] for t in times])
                for key in ("aa", "defaults", "100hz")
            }
            result.log(
                f"round {r + 1}/{rounds}, {time.perf_counter() - began:.0f} s: medians so far "
                + ", ".join(f"{k} x{v:.4f}" for k, v in so_far.items())
            )

    naive.close()
    aa = [t["aa"] / t["off"] for t in times]
    aa_ratio, (aa_low, aa_high) = stats.median(aa), stats.bootstrap_ci(aa)
    aa_text = f"A/A x{aa_ratio:.4f} [{aa_low:.4f}, {aa_high:.4f}]"
    summary: dict[str, Any] = {}
    for arm in arms[1:]:
        ratios = [t[arm.key] / t["off"] for t in times]
        ratio = stats.median(ratios)
        low, high = stats.bootstrap_ci(ratios)
        entry: dict[str, Any] = {
            "label": arm.label,
            "settings": arm.settings,
            "median_ratio": ratio,
            "ci95": [low, high],
            "min": min(ratios),
            "max": max(ratios),
            "ratios": ratios,
        }
        note = f"x{ratio:.4f} [{low:.4f}, {high:.4f}] over {len(ratios)} rounds"
        if arm.key != "aa":
            note += f"; {aa_text}"
        cost: dict[str, Any] | None = None
        if costs[arm.key]:
            sampler = samplers.get(arm.key)
            cost = summarize_costs(costs[arm.key], sampler.steady_rates() if sampler else None)
            entry["sampler"] = cost
            note += f"; sampler {cost['core_share'] * 100:.3g}% of a core"
        summary[arm.key] = entry
        result.log(f"{arm.key}: {note}")
        result.add(
            f"slowdown, {arm.label}{where}",
            (ratio - 1.0) * 100.0,
            "%",
            target=arm.target,
            ci=((low - 1.0) * 100.0, (high - 1.0) * 100.0),
            note=note + f"; {steps} steps a run",
        )
        if cost is not None:
            s_low, s_high = (v * 100 for v in cost["core_share_ci95"])
            in_runs = cost["core_share_in_runs"] * 100
            tps = sum(cost["ticks_per_second"].values())
            steady = "at its cadences in a steady session, " if arm.settings is not None else ""
            result.add(
                f"sampler thread under the loop, {arm.label}{where}",
                cost["core_share"] * 100,
                "% of a core",
                target=arm.target,
                ci=(s_low, s_high),
                note=f"{steady}95% CI {s_low:.3g}..{s_high:.3g}%; in the runs {in_runs:.3g}%"
                f" ({tps:.0f} ticks/s, {cost['nvml_calls_per_second']:.0f} NVML calls/s); "
                "CPU per tick: "
                + ", ".join(f"{k} {v:.1f} µs" for k, v in cost["cpu_us_per_tick"].items()),
            )
    for sampler in samplers.values():
        sampler.mon.close()
    result.details.update(
        device=str(device),
        ms_per_step=per_step * 1e3,
        steps_per_run=steps,
        rounds=len(times),
        rounds_asked=rounds,
        stopped_early=stopped_early,
        seed=SEED,
        gpus_seen_by_monitor=len(samplers["defaults"].mon._session.device_source.devices),
        monitor_allocator_status=samplers["defaults"].mon._session.allocator("torch").status,
        arms=summary,
        round_seconds=times,
        round_orders=orders,
        how=(
            "ratio: an arm's run time over the off arm's in the same round; median over "
            "rounds, 95% percentile-bootstrap interval. core_share: each tick class's CPU per "
            "tick (the sampler's own accounting, pooled over the arm's runs) times that "
            "class's rate in a steady session at the arm's settings (steady_ticks_per_second); "
            "core_share_in_runs: the thread's CPU time in its ticks over the time it ran "
            "(start to stop of each run), which counts the first tick after each start, "
            "which reads every cadence that fell due while stopped: an upper bound."
        ),
    )
    result.finish()


if __name__ == "__main__":
    main()
