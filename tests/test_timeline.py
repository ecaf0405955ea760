"""The timeline: bounded, multi-resolution, cursor and window reads."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from nbgpumon._sampling.timeline import Timeline


def filled(seconds: float, rate: float = 10.0, **kwargs) -> Timeline:
    tl = Timeline(["a", "b"], **kwargs)
    for i in range(int(seconds * rate)):
        t = 1000.0 + i / rate
        tl.append(t, [float(i), None if i % 2 else 1.0])
    return tl


def test_since_cursor_returns_only_new_rows():
    tl = filled(1)
    cursor = tl.cursor
    tl.append(2000.0, [1.5, 2.5])
    tl.append(2000.1, [3.5, None])
    chunk = tl.since(cursor)
    assert (chunk.start, chunk.end, chunk.gap) == (10, 12, False)
    assert chunk.values[:, 0].tolist() == [1.5, 3.5]
    assert math.isnan(chunk.values[1, 1])
    assert tl.since(tl.cursor).values.shape == (0, 2)


def test_a_reader_that_fell_behind_is_told_of_the_gap():
    tl = filled(100, raw_capacity=64)
    chunk = tl.since(0)
    assert chunk.gap and chunk.start == 1000 - 64 and len(chunk.times) == 64


def test_memory_is_fixed_at_construction_however_long_it_runs():
    tl = Timeline(["a"], raw_capacity=128, levels=((1.0, 16), (10.0, 16)))
    size = tl.nbytes()
    for i in range(20_000):
        tl.append(i * 0.1, [float(i)])
    assert tl.nbytes() == size
    assert tl.cursor == 20_000


def test_old_samples_survive_as_min_max_mean_buckets():
    tl = filled(60, raw_capacity=100, levels=((1.0, 1000), (10.0, 100)))
    w = tl.window(1000.0, 1001.0 - 1e-9)  # the first second: only in the 1 s buckets now
    assert w.times.tolist() == [1000.0]
    assert w.low[0, 0] == 0 and w.high[0, 0] == 9
    assert w.mean[0, 0] == pytest.approx(4.5)
    assert w.mean[0, 1] == 1.0  # missing values don't drag the mean down


def test_a_window_is_stitched_from_coarse_old_rows_and_fine_recent_rows():
    tl = filled(60, raw_capacity=100, levels=((1.0, 1000), (10.0, 100)))
    w = tl.window()
    assert np.all(np.diff(w.times) > 0)
    raw_rows = w.times >= 1050.0
    assert raw_rows.sum() == 100  # the last 10 s at full rate
    assert (~raw_rows).sum() == 50  # 50 one-second buckets before them
    assert w.high[:, 0].max() == 599


def test_the_coarsest_level_reaches_back_when_the_finer_ones_have_wrapped():
    tl = filled(120, raw_capacity=50, levels=((1.0, 20), (10.0, 100)))
    w = tl.window(1000.0, 1010.0)
    assert w.times[0] == 1000.0
    assert w.high[0, 0] == 99  # the first 10 s bucket: samples 0..99


def test_a_coarse_bucket_that_overlaps_the_raw_samples_is_left_out():
    # Samples from 7.0 s to 11.4 s past a 10 s boundary: the 10 s bucket [0, 10) has closed,
    # stamped at 0, but the raw ring still holds every sample in it.
    tl = Timeline(["a"], raw_capacity=1000, levels=((1.0, 100), (10.0, 100)))
    for i in range(45):
        tl.append(1007.0 + i / 10, [float(i)])
    w = tl.window()
    assert w.times[0] == 1007.0  # not 1000.0: nothing shown before the first sample
    assert len(w.times) == 45 and np.all(np.diff(w.times) > 0)


def test_column_stats_gives_mean_and_max_over_a_range():
    tl = filled(10)
    stats = tl.column_stats(["a", "b", "missing"], 1002.0, 1002.9)
    mean, high = stats["a"]
    assert mean == pytest.approx(24.5) and high == 29
    assert stats["b"] == (1.0, 1.0)
    assert stats["missing"] is None
    assert tl.column_stats(["a"], 0, 1) == {"a": None}


def test_latest_names_every_column():
    tl = filled(1)
    latest = tl.latest()
    assert latest["a"] == 9 and latest["time"] == pytest.approx(1000.9)
    assert Timeline(["x"]).latest() is None


def test_eight_gpus_for_a_day_at_10_hz_fit_in_64_mb():
    columns = [f"gpu{g}.m{m}" for g in range(8) for m in range(15)] + ["h1", "h2", "h3"]
    assert Timeline(columns).nbytes() <= 64 * 2**20


def test_running_stats_see_every_row_from_their_start_exactly_however_long():
    # a raw ring of 100 rows: after 5,000 rows the window holds 1 s buckets, whose means a
    # range read can only average; the running sums saw every row
    tl = Timeline(["a", "b"], raw_capacity=100)
    for i in range(10):
        tl.append(1000.0 + i * 0.1, [5.0, None])
    tracker = tl.track(["a", "b", "missing"], since=1000.5)  # rows already there count too
    for i in range(10, 5000):
        tl.append(1000.0 + i * 0.1, [float(i % 7), float(i) if i % 2 else None])
    a = [5.0] * 5 + [float(i % 7) for i in range(10, 5000)]
    b = [float(i) for i in range(10, 5000) if i % 2]
    stats = tl.untrack(tracker)
    assert stats["a"] == (pytest.approx(sum(a) / len(a)), 6.0)
    assert stats["b"] == (pytest.approx(sum(b) / len(b)), 4999.0)
    assert stats["missing"] is None
    tl.append(2000.0, [100.0, 100.0])  # untracked: no longer counted
    assert tracker.result() == stats


def test_a_tracker_counts_no_row_before_its_start_and_unclosed_ones_are_let_go():
    tl = Timeline(["a"])
    tl.append(1.0, [9.0])
    tracker = tl.track(["a"], since=2.0)
    tl.append(1.5, [8.0])  # a sample taken before the start, appended after it
    tl.append(2.0, [1.0])
    assert tracker.result() == {"a": (1.0, 1.0)}
    for _ in range(100):
        tl.track(["a"], since=0.0)
    assert len(tl._trackers) == 64  # MAX_TRACKERS: the oldest go


def test_a_paused_tracker_counts_from_when_it_is_resumed_until_its_end():
    # a cell's tracker is made while no cell runs (paused), resumed at the cell's start, and
    # bounded at its end: rows before, and rows stamped after the end, are not the cell's
    tl = Timeline(["a"])
    tracker = tl.track(["a"], since=math.inf)
    tl.append(1.0, [9.0])
    tl.append(2.0, [3.0])  # stamped after the start, appended before it was resumed
    tl.resume(tracker, since=1.5)
    tl.append(3.0, [5.0])
    tracker.until = 3.5
    tl.append(4.0, [100.0])  # after its end: not counted, though still tracked
    assert tl.untrack(tracker) == {"a": (4.0, 5.0)}
    del tl._trackers[:]
    tl.resume(tracker, since=10.0)  # let go while paused (MAX_TRACKERS): tracked again
    assert tl._trackers == [tracker]


def test_buckets_fold_missing_values_out_at_every_level():
    # 1 s buckets of ten rows, then 10 s buckets of those; column b is missing in odd rows,
    # and column c in the whole of one second
    rows = []
    for i in range(250):
        t = 1000.0 + i / 10
        rows.append(
            (t, [float(i), None if i % 2 else float(-i), None if 1010 <= t < 1011 else 2.0])
        )
    # a raw ring of 16 rows: the window before its last 1.6 s is read from the buckets
    one = Timeline(["a", "b", "c"], raw_capacity=16, levels=((1.0, 100), (10.0, 10)))
    for t, row in rows:
        one.append(t, row)
    w = one.window(t1=1019.5)
    seconds = w.times.tolist()
    assert seconds[:2] == [1000.0, 1001.0]
    k = seconds.index(1003.0)  # rows 30..39: b present in 30, 32, .., 38
    assert w.mean[k].tolist() == [34.5, -34.0, 2.0]
    assert w.low[k].tolist() == [30.0, -38.0, 2.0] and w.high[k].tolist() == [39.0, -30.0, 2.0]
    k = seconds.index(1010.0)  # c missing for that whole second
    assert math.isnan(w.mean[k, 2]) and math.isnan(w.low[k, 2]) and math.isnan(w.high[k, 2])
    # a 10 s bucket (once the 1 s ring's older buckets fold): the weighted mean of rows 0..99
    coarse = Timeline(["a", "b", "c"], raw_capacity=16, levels=((1.0, 12), (10.0, 10)))
    for t, row in rows:
        coarse.append(t, row)
    w = coarse.window(t1=1009.99)
    assert w.times.tolist()[0] == 1000.0
    assert w.mean[0].tolist() == [49.5, -49.0, 2.0]
    assert w.low[0].tolist() == [0.0, -98.0, 2.0] and w.high[0].tolist() == [99.0, 0.0, 2.0]


def test_a_row_of_the_wrong_width_is_refused_and_the_rings_stay_as_they_were():
    tl = filled(1)
    with pytest.raises(ValueError, match="a row of 3 values for 2 columns"):
        tl.append(2000.0, [1.0, 2.0, 3.0])
    tl.append(2000.1, [5.0, 6.0])
    assert tl.cursor == 11 and tl.latest() == {"a": 5.0, "b": 6.0, "time": 2000.1}
    assert tl.since(10).values.tolist() == [[5.0, 6.0]]


def test_the_plain_python_fold_and_numpys_make_the_same_buckets(monkeypatch):
    # numpy folds only where it is loaded already; the sampler's own writes never import it
    rows = [
        (
            1000.0 + i * 0.37,
            [None if (i * k) % 5 == 0 else (i * 7919 % 1000) / (k + 1) for k in range(4)],
        )
        for i in range(3000)
    ]
    levels = ((1.0, 50), (10.0, 20), (60.0, 10))
    with_numpy = Timeline(list("abcd"), raw_capacity=64, levels=levels)
    for t, row in rows:
        with_numpy.append(t, row)
    without = Timeline(list("abcd"), raw_capacity=64, levels=levels)
    with monkeypatch.context() as patch:
        patch.delitem(sys.modules, "numpy")
        for t, row in rows:
            without.append(t, row)
    a, b = with_numpy.window(), without.window()
    assert a.times.size > 64  # buckets of every level, not only the raw rows
    for name in ("times", "mean", "low", "high"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
