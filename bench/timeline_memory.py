"""Memory and speed of the Timeline for 8 GPUs over 24 h at 10 Hz (target <= 64 MB).

The column set is the sampler's own (the metric registry's, for 8 devices: 11
NVML + 4 torch metrics per GPU, 3 host columns). 864,000 synthetic random-walk rows, 0.1 s
apart, go in through ``Timeline.append``; the torch columns of GPUs 4-7 stay missing (hidden
by CUDA_VISIBLE_DEVICES), as the sampler would leave them. Reports the rings' bytes, the
process RSS growth, tracemalloc's peak, the append cost and the cost of ``window()`` reads.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from typing import Any

import numpy as np
import psutil
import result_file
import stats

from nbgpumon._foundation import metrics
from nbgpumon._sampling.timeline import Timeline

TARGET_MIB = 64.0
MIB = 1024.0 * 1024.0
STEP = 0.1  # seconds between samples: the default interval
START = 1_700_000_000.0  # unix seconds; realistic magnitudes for the float64 times
CHUNK = 200  # rows generated at a time: small, so the generator barely moves RSS
WINDOWS = {"last 10 min": 600.0, "last 1 h": 3600.0, "last 24 h": 86400.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=8, help="devices the columns are for")
    parser.add_argument("--hours", type=float, default=24.0, help="hours of samples fed")
    parser.add_argument(
        "--trace-hours", type=float, default=2.0, help="hours fed again under tracemalloc"
    )


def columns_for(n_gpu: int) -> list[str]:
    """The sampler's column names for ``n_gpu`` devices (NVML, then torch, then the host)."""
    devices = range(n_gpu)
    return [
        column
        for source in ("nvml", "torch", "host")
        for column in metrics.columns_for(metrics.metrics_of(source), devices)
    ]


class RandomWalk:
    """Rows of plausible values (lists with None where the sampler has no value)."""

    def __init__(self, columns: list[str], n_gpu: int, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.width = len(columns)
        self.state = self.rng.uniform(1e3, 1e9, size=self.width)
        hidden = {f"gpu{i}." for i in range(n_gpu // 2, n_gpu)}
        self.missing = [
            i
            for i, name in enumerate(columns)
            if metrics.metric_of(name).source == "torch" and f"{name.split('.', 1)[0]}." in hidden
        ]

    def rows(self, n: int) -> list[list[float | None]]:
        steps = self.rng.normal(0.0, 1e6, size=(n, self.width))
        walk = np.abs(self.state + np.cumsum(steps, axis=0))
        self.state = walk[-1]
        rows: list[list[float | None]] = walk.tolist()
        for row in rows:
            for i in self.missing:
                row[i] = None
        return rows


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def feed(timeline: Timeline, walk: RandomWalk, n: int, durations: np.ndarray | None) -> None:
    """Append ``n`` rows 0.1 s apart; per-append seconds into ``durations`` when given."""
    clock = time.perf_counter
    append = timeline.append
    for start in range(0, n, CHUNK):
        rows = walk.rows(min(CHUNK, n - start))
        if durations is None:
            for j, row in enumerate(rows):
                append(START + (start + j) * STEP, row)
            continue
        for j, row in enumerate(rows):
            t0 = clock()
            append(START + (start + j) * STEP, row)
            durations[start + j] = clock() - t0
        del rows


def traced_feed(timeline_columns: list[str], walk: RandomWalk, n: int) -> dict[str, float]:
    """tracemalloc: bytes the Timeline holds, the most an append adds, what a 24 h read adds."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    timeline = Timeline(timeline_columns)
    held = tracemalloc.get_traced_memory()[0] - base
    transient = 0
    clock = time.perf_counter
    started = clock()
    for start in range(0, n, CHUNK):
        rows = walk.rows(min(CHUNK, n - start))  # outside the measured span
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for j, row in enumerate(rows):
            timeline.append(START + (start + j) * STEP, row)
        transient = max(transient, tracemalloc.get_traced_memory()[1] - before)
    seconds = clock() - started
    end = START + (n - 1) * STEP
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    window = timeline.window(end - 86400.0, end)
    read_peak = tracemalloc.get_traced_memory()[1] - before
    del window
    tracemalloc.stop()
    return {
        "timeline_bytes": held,
        "append_transient_bytes": transient,
        "window_24h_transient_bytes": read_peak,
        "peak_bytes": held + transient,
        "rows": n,
        "feed_seconds": seconds,
    }


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("timeline_memory", args)
    hours = 1.0 if args.quick else args.hours
    trace_hours = min(hours, 0.25 if args.quick else args.trace_hours)
    n = round(hours * 3600 / STEP)
    columns = columns_for(args.gpus)
    result.details.update(gpus=args.gpus, columns=len(columns), hours=hours, appends=n)
    result.log(f"{len(columns)} columns ({args.gpus} GPUs), {n:,} appends ({hours:g} h at 10 Hz)")

    walk = RandomWalk(columns, args.gpus)
    durations = np.full(n, np.nan)  # touched now, so it is not part of the growth
    warm = walk.rows(CHUNK)  # the generator's buffers are part of the baseline
    gc.collect()
    rss0 = rss()
    del warm
    timeline = Timeline(columns)
    rss_built = rss()
    started = time.perf_counter()
    feed(timeline, walk, n, durations)
    feed_seconds = time.perf_counter() - started
    gc.collect()
    rss_fed = rss()
    nbytes = timeline.nbytes()
    append_us = stats.describe((durations * 1e6).tolist())
    result.details.update(
        nbytes=nbytes,
        rss_before=rss0,
        rss_after_construction=rss_built,
        rss_after_feed=rss_fed,
        feed_seconds=feed_seconds,
        append_us=append_us,
    )
    result.log(
        f"fed in {feed_seconds:.1f} s; nbytes {nbytes / MIB:.1f} MiB; "
        f"RSS +{(rss_fed - rss0) / MIB:.1f} MiB"
    )

    end = START + (n - 1) * STEP
    windows: dict[str, Any] = {}
    for label, span in WINDOWS.items():
        for which, cols in (("all columns", None), ("one column", [columns[3]])):
            timings = []
            rows = 0
            for _ in range(20):
                t0 = time.perf_counter()
                got = timeline.window(end - span, end, columns=cols)
                timings.append((time.perf_counter() - t0) * 1e3)
                rows = len(got.times)
            windows[f"{label}, {which}"] = {"ms": stats.describe(timings), "rows": rows}
            result.log(f"window {label}, {which}: {stats.median(timings):.2f} ms, {rows} rows")
    result.details["windows"] = windows

    del timeline
    gc.collect()
    trace_n = round(trace_hours * 3600 / STEP)
    result.log(f"again under tracemalloc for {trace_hours:g} h ({trace_n:,} appends)")
    traced = traced_feed(columns, RandomWalk(columns, args.gpus, seed=1), trace_n)
    result.details["tracemalloc"] = traced

    result.add(
        f"Timeline.nbytes(), {args.gpus} GPUs ({len(columns)} columns)",
        nbytes / MIB,
        "MiB",
        TARGET_MIB,
        note="fixed at construction",
    )
    result.add(
        f"process RSS growth after {hours:g} h of samples",
        (rss_fed - rss0) / MIB,
        "MiB",
        TARGET_MIB,
        note=f"+{(rss_built - rss0) / MIB:.1f} MiB at construction",
    )
    result.add(
        "tracemalloc peak while appending",
        traced["peak_bytes"] / MIB,
        "MiB",
        TARGET_MIB,
        note=f"{trace_hours:g} h fed; of which transient "
        f"{traced['append_transient_bytes'] / MIB:.2f} MiB; a 24 h window() read allocates "
        f"{traced['window_24h_transient_bytes'] / MIB:.1f} MiB more while it runs",
    )
    result.add(
        "Timeline.append() median",
        append_us["median"],
        "µs",
        note=f"p99 {append_us['p99']:.1f} µs, mean {append_us['mean']:.1f} µs "
        f"(bucket folds included), max {append_us['max'] / 1e3:.2f} ms",
    )
    for label in WINDOWS:
        w = windows[f"{label}, all columns"]
        one = windows[f"{label}, one column"]
        result.add(
            f"window() {label}, all columns",
            w["ms"]["median"],
            "ms",
            note=f"{w['rows']:,} rows; one column: {one['ms']['median']:.2f} ms",
        )
    result.finish()


if __name__ == "__main__":
    main()
