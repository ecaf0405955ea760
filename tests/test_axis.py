"""Chart ticks: round values, bytes in the table's unit, headroom, time in round steps."""

import numpy as np
import pytest

from nbgpumon._foundation.wording import format_bytes
from nbgpumon._views.chart.axis import (
    HEADROOM,
    MAX_TIME_TICKS,
    MIN_TIME_TICKS,
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


# spans from a fifth of a second to a month, each from a few starting points: a 2.5 s
# recording ticked each whole second showed just two labels
SPANS = [0.2, 0.25, 0.37, 0.6, 0.9, 1.3, 2.5, 3.7, 7, 13, 45, 100, 333, 2000, 5000, 4e4,
         86400, 2.2 * 86400, 9 * 86400, 17 * 86400, 20 * 86400, 60 * 86400]  # fmt: skip
STARTS = [1_700_000_000.0 + offset for offset in (0.0, 0.05, 0.123, 0.6, 7.77, 3599.9, 4e5)]


@pytest.mark.parametrize("span", SPANS)
@pytest.mark.parametrize("most", [MAX_TIME_TICKS, 10, 3])
def test_a_clock_axis_has_at_least_three_distinct_labels_for_any_span(span, most):
    for lo in STARTS:
        ticks, fmt = time_ticks(lo, lo + span, most)
        labels = clock_labels(ticks, fmt)
        assert MIN_TIME_TICKS <= len(ticks) <= max(most, 8), (lo, span, labels)
        assert len(set(labels)) == len(labels), labels  # precise enough to tell them apart
        assert lo <= ticks[0] and ticks[-1] <= lo + span
        assert len(set(np.round(np.diff(ticks), 6))) <= 1  # one round step


@pytest.mark.parametrize("span", SPANS)
def test_an_elapsed_axis_has_at_least_three_distinct_labels_for_any_span(span):
    for lead in (0.0, 0.03, 0.1):  # aligned time starts a little before the first cell
        ticks, labels, _ = elapsed_ticks(-lead * span, span)
        assert MIN_TIME_TICKS <= len(ticks) <= MAX_TIME_TICKS, (span, labels)
        assert len(set(labels)) == len(labels), labels
