"""Letting the main thread in between two pieces of a background thread's work.

A thread that wants the GIL while another holds it waits until the holder blocks, or for the
interpreter's switch interval (5 ms) before it asks the holder to let go. A cell's start or end
that comes while the sampler's thread publishes (rows, messages) would wait for all of it;
:func:`give_way` between the pieces makes that wait one piece's at most.
"""

from __future__ import annotations

import time

# long enough for a waiting thread to wake and take the GIL (a sleep shorter than the timer's
# slack, 50 µs on Linux, sleeps that long anyway); short beside a tick
GIVE_WAY_SECONDS = 50e-6


def give_way() -> None:
    """Give the GIL up for a moment, so that a thread waiting for it takes it now."""
    time.sleep(GIVE_WAY_SECONDS)
