"""The widget's packed ``history`` trait read back (docs/widget-protocol.md), for tests that
check what it carries, not only its header: a page draws these numbers."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class PackedHistory(NamedTuple):
    times: np.ndarray  # (rows,) float64
    mean: np.ndarray  # (rows, width) float32, as are low and high
    low: np.ndarray
    high: np.ndarray


def unpack_history(packed: bytes) -> PackedHistory:
    """The four arrays of a packed history; its length must be exactly what its header says."""
    rows, width = (int(n) for n in np.frombuffer(packed[:8], "<u4"))
    block = rows * width * 4
    assert len(packed) == 8 + rows * 8 + 3 * block, "the history's length and header disagree"
    times = np.frombuffer(packed, "<f8", rows, 8)
    at = 8 + rows * 8
    mean, low, high = (
        np.frombuffer(packed, "<f4", rows * width, at + k * block).reshape(rows, width)
        for k in range(3)
    )
    return PackedHistory(times, mean, low, high)


def assert_history_holds(packed: bytes, window) -> None:
    """``packed`` carries exactly ``window``'s rows (a ``Window``): its times, and its means,
    lows and highs as float32 (NaN where the window has NaN)."""
    mean = np.asarray(window.mean, dtype=np.float32)
    assert np.any(np.nan_to_num(mean) != 0), "a window of zeros: nothing to tell values apart"
    got = unpack_history(packed)
    np.testing.assert_array_equal(got.times, window.times)
    np.testing.assert_array_equal(got.mean, mean, err_msg="mean")
    for name in ("low", "high"):
        expected = np.asarray(getattr(window, name), dtype=np.float32)
        np.testing.assert_array_equal(getattr(got, name), expected, err_msg=name)
