"""Chart ticks: round values, bytes in the table's unit, headroom, time in round steps."""

import numpy as np
import pytest

from nbgpumon._foundation.units import format_bytes
from nbgpumon._views.axis import (
    HEADROOM,
    bytes_axis,
    clock_labels,
    elapsed_ticks,
    percent_axis,
    time_ticks,
    value_ticks,
)

MiB, GiB = 2**20, 2**30


@pytest.mark.parametrize(
    ("peak", "ticks"),
    [
        (0.737, [0, 0.2, 0.4, 0.6, 0.8]),
        (328, [0, 100, 200, 300, 400]),
        (1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (7, [0, 2, 4, 6, 8]),
        (0.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),  # nothing measured: an axis to 1 all the same
        (9, [0, 2, 4, 6, 8, 10]),  # five steps of 2 are nearer four than two of 5
    ],
)
def test_value_ticks_are_0_and_1_2_or_5_times_a_power_of_ten_up_to_the_peak(peak, ticks):
    assert value_ticks(peak).tolist() == ticks


@pytest.mark.parametrize("peak", [328 * MiB, 755.4 * MiB, 1.5 * GiB, 79 * GiB, 300 * 2**10])
def test_a_bytes_axis_is_in_the_unit_format_bytes_writes_its_peak_in(peak):
    axis = bytes_axis(peak)
    assert format_bytes(peak).split()[-1] == axis.unit
    assert axis.ticks[-1] * axis.size >= peak  # the ticks reach the peak
    assert axis.top * axis.size >= peak * (1 + HEADROOM) - 1e-6  # and the top clears it
    assert all(label == label.rstrip(".") and "e" not in label for label in axis.labels)


def test_a_peak_on_a_round_number_still_gets_headroom():
    axis = bytes_axis(GiB)  # 1 GiB: the last tick is the peak itself
    assert axis.unit == "GiB" and axis.ticks[-1] == 1.0
    assert axis.top == pytest.approx(1 + HEADROOM)
    assert percent_axis().top > 100 and percent_axis().ticks[-1] == 100


def test_tick_labels_are_written_as_plain_numbers():
    assert bytes_axis(0.737 * GiB).labels == ["0", "200", "400", "600", "800"]  # MiB
    assert bytes_axis(1.7 * GiB).labels == ["0", "0.5", "1", "1.5", "2"]


def test_clock_labels_use_the_step_s_precision_in_utc():
    t0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    ticks, fmt = time_ticks(t0 + 0.2, t0 + 20.1)
    assert clock_labels(ticks, fmt) == ["22:13:25", "22:13:30", "22:13:35", "22:13:40"]
    ticks, fmt = time_ticks(t0, t0 + 1.2)
    assert clock_labels(ticks, fmt)[:2] == ["22:13:20.000", "22:13:20.500"]


@pytest.mark.parametrize(
    ("lo", "hi", "labels", "unit"),
    [
        (0.0, 1.25, ["0", "0.2", "0.4", "0.6", "0.8", "1", "1.2"], "s"),
        (-3.0, 40.0, ["0", "10", "20", "30", "40"], "s"),
        (0.0, 600.0, ["0", "2", "4", "6", "8", "10"], "min"),
        (0.0, 5 * 3600.0, ["0", "1", "2", "3", "4", "5"], "h"),
    ],
)
def test_elapsed_ticks_are_round_numbers_of_one_unit(lo, hi, labels, unit):
    ticks, got, got_unit = elapsed_ticks(lo, hi)
    assert (got, got_unit) == (labels, unit)
    assert np.all(np.diff(ticks) > 0) and lo <= ticks[0] and ticks[-1] <= hi
