"""The ``cells`` message's rows as JSON, made a few rows at a time, each few a buffer."""

from __future__ import annotations

import json
import math

import numpy as np

from nbgpumon._views.widget.cells_message import cells_message, rows_json


def test_buffers_made_apart_hold_the_rows_in_order_and_the_header_counts_them():
    first = [{"index": 1, "label": "x = 'ü' # <b>text</b>", "peak": None, "exact": True}]
    second = [{"index": 2, "label": "y"}, {"index": 3, "label": "z"}]
    header, buffers = cells_message(1, [rows_json(first), rows_json(second)], 3)
    assert header == {"type": "cells", "first": 1, "count": 3}
    assert [row for b in buffers for row in json.loads(b.decode())] == first + second
    assert cells_message(4, [], 0) == ({"type": "cells", "first": 4, "count": 0}, [])


def test_a_label_utf8_cannot_say_still_goes():
    label = "x = '\ud800'  # half a surrogate pair, from a crafted request"
    (row,) = json.loads(rows_json([{"label": label}]))
    assert row == {"label": label}


def test_numpy_numbers_are_numbers_and_what_json_has_not_is_null():
    rows = [{"util_mean": np.float32(12.5), "alloc": np.int64(7), "peak": math.nan,
             "kinds": [{"bytes": math.inf, "gpu": 0}], "exact": False}]  # fmt: skip

    def refused(constant: str) -> None:  # (JSON.parse in the browser takes no NaN either)
        raise AssertionError(f"{constant} in the text")

    (row,) = json.loads(rows_json(rows), parse_constant=refused)
    assert row == {"util_mean": 12.5, "alloc": 7, "peak": None,
                   "kinds": [{"bytes": None, "gpu": 0}], "exact": False}  # fmt: skip
    # (numbers JSON has stay as they are: the strict pass alone)
    assert rows_json([{"util_mean": np.float32(12.5)}]) == b'[{"util_mean":12.5}]'
