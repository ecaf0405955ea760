"""The one clock every stored time comes from."""

from __future__ import annotations

import time

_WALL_ANCHOR = time.time() - time.monotonic()
WALL_ANCHOR = _WALL_ANCHOR  # wall_clock() is this plus time.monotonic(), for a caller that has
# read the monotonic clock already (the sampler's tick: one clock read, no call)


def wall_clock() -> float:
    """Unix time in seconds that never goes backwards (a monotonic clock, anchored once).

    Every time stored in a timeline and every ledger start comes from here, so a clock step
    (NTP, suspend) can't unsort the timeline or misplace a cell against its samples.
    """
    return _WALL_ANCHOR + time.monotonic()
