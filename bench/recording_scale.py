"""A recording of 8 GPUs over 24 h at 10 Hz: its size on disk (target <= 200 MB) and the time
``nbgpumon.load()`` takes to read it back (target <= 2 s).

No waiting 24 h: synthetic random-walk rows with 10 Hz timestamps (timeline_memory.py's column
set and walk) go into a real ``Timeline``, and the real ``RecordingWriter`` writes them with
``write_pending`` every half second of sample time, as its thread would, folding the samples
older than the raw window (15 min) into 1 min buckets as it goes. A cell ends every minute and a
mark is set every ten. Reports the file's size (and what it would be with every sample kept,
from its growth before the first fold), the log's size while writing, SQLite's free pages, the
cost of a write per sample and per row, the compaction's share and its longest pass, then
``load()``, ``samples_frame()`` and what the report and the chart read of it.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path

import result_file
import stats
from timeline_memory import RandomWalk, columns_for

import nbgpumon
from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._recording.writer import RecordingWriter, open_database
from nbgpumon._sampling.timeline import Timeline
from nbgpumon._views.report.bqplot_report import _session_data
from nbgpumon._views.widget.live_chart import HISTORY_ROWS

TARGET_MB, TARGET_LOAD_S = 200.0, 2.0
MB = 1e6
STEP = 0.1  # seconds between samples: the default interval
FLUSH = 5  # samples per write_pending: the writer's 0.5 s at 10 Hz
START = 1_700_000_000.0
CELL_EVERY, MARK_EVERY = 600, 6000  # samples: a cell a minute, a mark every ten minutes
GIB = 2**30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=8, help="devices the columns are for")
    parser.add_argument("--hours", type=float, default=24.0, help="hours of samples written")
    parser.add_argument(
        "--raw-seconds", type=float, default=900.0, help="the raw window (record_raw_seconds)"
    )
    parser.add_argument("--keep", type=Path, help="write the recording here and keep it")


def cell(index: int, start: float, n_gpu: int) -> CellRecord:
    usage = tuple(
        DeviceUsage(i, i, "H200", GIB, GIB, 2 * GIB, 2 * GIB, 3 * GIB, 3 * GIB, 2 * GIB, True,
                    GIB, 50.0, 100.0)
        for i in range(n_gpu)
    )  # fmt: skip
    return CellRecord(index, "cell", index + 1, None, f"train_step({index})", start, 55.0, "ok",
                      "", usage, GIB, GIB, GIB, False)  # fmt: skip


def info(n_gpu: int) -> dict:
    gpus = [
        {"index": i, "cuda_index": i, "name": "NVIDIA H200", "uuid": f"GPU-{i}",
         "memory_total": 141 * GIB}
        for i in range(n_gpu)
    ]  # fmt: skip
    return {"host": "bench", "pid": os.getpid(), "gpus": gpus, "driver": "580", "versions": {}}


def file_bytes(path: Path) -> tuple[int, int]:
    """(the file, its -wal log) in bytes."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size, wal.stat().st_size if wal.exists() else 0


def write(path: Path, args: argparse.Namespace, n: int) -> dict:
    columns = columns_for(args.gpus)
    timeline = Timeline(columns)
    writer = RecordingWriter(path, timeline, info(args.gpus), raw_seconds=args.raw_seconds)
    # no start(): no thread; this loop writes instead, on a clock of its own
    db = open_database(path)
    walk = RandomWalk(columns, args.gpus)
    compactor = writer.compactor
    fold, fold_times = compactor.fold, []

    def timed_fold(conn, newest):  # the compaction's own share of the writes
        t0 = time.perf_counter()
        folded = fold(conn, newest)
        if folded:
            fold_times.append(time.perf_counter() - t0)
        return folded

    compactor.fold = timed_fold
    write_seconds, flush_times, wal_max, one_window = 0.0, [], 0, None
    for start in range(0, n, FLUSH):
        for j, row in enumerate(walk.rows(min(FLUSH, n - start))):
            timeline.append(START + (start + j) * STEP, row)
        i = start + FLUSH
        if i % CELL_EVERY == 0:
            writer.add_cell(cell(i // CELL_EVERY, START + (i - 550) * STEP, args.gpus))
        if i % MARK_EVERY == 0:
            writer.add_mark(START + i * STEP, f"epoch {i // MARK_EVERY}")
        t0 = time.perf_counter()
        writer.write_pending(db)
        took = time.perf_counter() - t0
        write_seconds += took
        flush_times.append(took)
        if i % 36_000 == 0:  # every simulated hour
            wal_max = max(wal_max, file_bytes(path)[1])
        if one_window is None and i * STEP >= args.raw_seconds:  # all raw, nothing folded yet
            one_window = file_bytes(path)[0] / (i * STEP)
    size_open, wal_open = file_bytes(path)
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    (free,) = db.execute("PRAGMA freelist_count").fetchone()
    db.close()
    size, wal = file_bytes(path)
    rows_per_sample = args.gpus + 1
    return {
        "size": size,
        "wal_after_close": wal,
        "size_while_open": size_open,
        "wal_while_open": wal_open,
        "wal_max_hourly": max(wal_max, wal_open),
        "raw_bytes_per_second": one_window,
        "pages": pages,
        "free_pages": free,
        "samples": n,
        "sqlite_rows": n * rows_per_sample,
        "rows_folded": compactor.rows_folded,
        "buckets": compactor.buckets_written,
        "write_seconds": write_seconds,
        "us_per_sample": write_seconds / n * 1e6,
        "us_per_row": write_seconds / (n * rows_per_sample) * 1e6,
        "fold_seconds": sum(fold_times),
        "fold_ms": stats.describe([t * 1e3 for t in fold_times]) if fold_times else {},
        "write_pending_ms": stats.describe([t * 1e3 for t in flush_times]),
    }


def timed(fn, repeat: int = 5) -> tuple[float, object, float]:
    """Median wall seconds of ``repeat`` calls, the last result, and the median CPU seconds
    (this process's: on a shared machine the wall time also holds other programs' turns)."""
    times, cpu, out = [], [], None
    for _ in range(repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), out, statistics.median(cpu)


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("recording_scale", args)
    hours = 1.5 if args.quick else args.hours
    n = round(hours * 3600 / STEP) // FLUSH * FLUSH
    result.details.update(gpus=args.gpus, hours=hours, raw_seconds=args.raw_seconds)
    with tempfile.TemporaryDirectory(prefix="nbgpumon-bench-") as folder:
        path = args.keep or Path(folder) / "day.sqlite"
        result.log(f"writing {n:,} samples ({hours:g} h at 10 Hz, {args.gpus} GPUs) to {path}")
        started = time.perf_counter()
        written = write(path, args, n)
        result.details["write"] = written
        took = time.perf_counter() - started
        result.log(f"written in {took:.0f} s: {written['size'] / MB:.1f} MB")

        load_s, session, load_cpu = timed(lambda: nbgpumon.load(path))
        frame_s, frame, _ = timed(lambda: session.samples_frame())
        report_s, _, _ = timed(lambda: _session_data(session))
        chart_s, _, _ = timed(lambda: session.window().downsample(HISTORY_ROWS))
        result.details["read"] = {
            "rows": len(session.times),
            "buckets": session.buckets,
            "cells": len(session.records),
            "marks": len(session.marks),
            "frame_shape": list(frame.shape),
            "load_s": load_s,
            "load_cpu_s": load_cpu,
            "load_average": os.getloadavg(),
            "samples_frame_s": frame_s,
            "report_data_s": report_s,
            "chart_history_s": chart_s,
        }
    per_second = written["raw_bytes_per_second"]
    raw_estimate = per_second * hours * 3600 if per_second is not None else None
    result.add(
        f"file size, {args.gpus} GPUs, {hours:g} h at 10 Hz",
        written["size"] / MB,
        "MB",
        TARGET_MB,
        note=f"raw window {args.raw_seconds:g} s, then 1 min buckets; every sample kept would "
        + (f"be about {raw_estimate / MB:,.0f} MB (the growth before the first fold, "
           f"x {hours:g} h)" if raw_estimate else "need a longer run to estimate")
        + f"; free pages {written['free_pages']:,} of {written['pages']:,}; -wal at most "
        f"{written['wal_max_hourly'] / MB:.1f} MB while written",
    )  # fmt: skip
    result.add(
        "nbgpumon.load()",
        load_s,
        "s",
        TARGET_LOAD_S,
        note=f"median of 5; CPU {load_cpu:.2f} s, load average {os.getloadavg()[0]:.1f}; "
        f"{len(session.times):,} rows ({session.buckets:,} of them buckets), "
        f"{len(session.records):,} cells",
    )
    result.add("samples_frame()", frame_s, "s", note=f"{frame.shape[0]:,} x {frame.shape[1]}")
    result.add(
        "what the report and the chart read (window + downsample)",
        max(report_s, chart_s),
        "s",
        note=f"report {report_s * 1e3:.0f} ms, chart history {chart_s * 1e3:.0f} ms",
    )
    ms = written["write_pending_ms"]
    result.add(
        "write cost per sample (all GPUs' rows)",
        written["us_per_sample"],
        "µs",
        note=f"{written['us_per_row']:.1f} µs per SQLite row; write_pending median "
        f"{ms['median']:.2f} ms, p99 {ms['p99']:.2f} ms, max {ms['max']:.1f} ms",
    )
    fold = written["fold_ms"]
    result.add(
        "compaction, per pass that folded",
        fold.get("median"),
        "ms",
        note=f"{written['fold_seconds'] / written['write_seconds']:.0%} of the write time; "
        f"max {fold.get('max', float('nan')):.1f} ms; {written['buckets']:,} bucket rows",
    )
    result.finish()


if __name__ == "__main__":
    main()
