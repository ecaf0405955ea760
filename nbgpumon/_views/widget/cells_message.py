"""The ``cells`` message: the ledger's new rows as UTF-8 JSON buffers (docs/widget-protocol.md).

Rows are made into JSON a few at a time as they are made (the sampler's thread, which gives the
GIL up between), each few a buffer of the message, not all at once when the message goes: Run
All's half second of rows (hundreds) held the GIL for a millisecond or more in one piece in
the message's own JSON (or in joining them into one text), and a cell's start or end that came
meanwhile waited for it.
"""

from __future__ import annotations

import json
import math
from numbers import Integral, Real
from typing import Any


def rows_json(rows: list[dict[str, Any]]) -> bytes:
    """``rows`` as a JSON list, UTF-8: one buffer of a ``cells`` message. Text beyond ASCII is
    escaped (``\\u00fc``): a label holding half a surrogate pair, which UTF-8 cannot say, still
    goes."""
    try:
        text = json.dumps(rows, **_STRICT)
    except ValueError:  # a NaN or an infinity, which JSON has not: null, as a missing value
        text = json.dumps(_finite(rows), **_STRICT)
    return text.encode("ascii")


def cells_message(first: int, buffers: list[bytes], count: int) -> tuple[dict, list[bytes]]:
    """The message carrying ``count`` rows in ``buffers`` (each :func:`rows_json`'s, in order);
    ``first``: the index of the oldest record the ledger holds."""
    return {"type": "cells", "first": first, "count": count}, buffers


def _number(value: Any) -> Any:
    """numpy's scalars (the rows' checks take them as numbers) as Python's."""
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_STRICT: dict[str, Any] = {
    "ensure_ascii": True, "allow_nan": False, "separators": (",", ":"), "default": _number,
}  # fmt: skip


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, Real) and not isinstance(value, Integral):
        number = float(value)
        return number if math.isfinite(number) else None
    return value
