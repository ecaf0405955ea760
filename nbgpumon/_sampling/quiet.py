"""When the sampler may tick less often: while nothing it watches moves.

A sampler that wakes ten times a second in a kernel nobody is using costs a share of a core for
rows that all say the same. :class:`QuietWatch` tells it when it may wait ``idle_interval``
instead of its interval: no cell running, nothing else busy (this kernel's children), every
GPU's utilization zero and its memory in use unchanged, and the host's RSS within ``RSS_MOVED``,
for ``QUIET_AFTER`` seconds. The first tick that sees any of them move, and a cell's start, put
it back on its interval (a cell's start wakes it: its first row comes an interval later, not
during the cell's start). A cell counts as a move however short it was: what follows it (its
row, the chart's updates) comes at the interval too. The timeline's rows are then sparser while
nothing moved, and only then.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

QUIET_AFTER = 2.0  # seconds of nothing moving before the sampler waits idle_interval
RSS_MOVED = 1 << 20  # bytes: the host's RSS moving less than this since the last move is still
IDLE_INTERVAL = 1.0  # seconds between ticks while quiet (GPUMon.idle_interval)


class QuietWatch:
    """Whether nothing moves; the sampler asks it after each tick (its thread), the cell
    pipeline sets ``cell_running`` and counts ``cells_begun`` (the main thread). ``asleep``:
    the sampler waits ``idle_interval`` now; 0 seconds turns that off. ``after``: the seconds
    of nothing moving before it does."""

    __slots__ = ("_after", "_busy", "_cells_seen", "_last", "_moved", "_since", "_tick_at",
                 "_util", "asleep", "cell_running", "cells_begun", "idle_interval",
                 "quiet_seconds", "watched_seconds")  # fmt: skip

    def __init__(
        self,
        columns: Sequence[str],
        used: Sequence[str],
        util: Sequence[str],
        rss: str | None,
        busy: Callable[[], bool] = lambda: False,
        idle_interval: float = IDLE_INTERVAL,
        after: float = QUIET_AFTER,
    ) -> None:
        at = {name: i for i, name in enumerate(columns)}
        # (column, how far it may move and still be still)
        self._moved = [(at[c], 0.0) for c in used if c in at]
        if rss is not None and rss in at:
            self._moved.append((at[rss], float(RSS_MOVED)))
        self._util = [at[c] for c in util if c in at]
        self._last: list[float | None] = [None] * len(self._moved)
        self._busy, self._after = busy, after
        self._since = time.monotonic()  # when something last moved
        self.idle_interval = idle_interval
        self.cell_running = False
        # cells begun so far, and as many as the last tick saw: a cell that began and ended
        # between two ticks moved too (a count, not a clock read, on the cell's path)
        self.cells_begun = self._cells_seen = 0
        self.asleep = False
        # seconds between the ticks it was asked after, and those of them waited quietly
        self.watched_seconds = self.quiet_seconds = 0.0
        self._tick_at: float | None = None

    def quiet_share(self, now: float) -> float:
        """Of the time since its first tick up to monotonic time ``now``, the fraction the
        sampler waited quietly (the wait under way counted)."""
        since = self._tick_at
        if since is None:
            return 0.0
        waiting = max(0.0, now - since)
        watched = self.watched_seconds + waiting
        quiet = self.quiet_seconds + (waiting if self.asleep else 0.0)
        return quiet / watched if watched > 0 else 0.0

    def after_tick(self, row: Sequence[float | None] | None, mono: float) -> bool:
        """Whether the sampler may wait ``idle_interval`` after the tick that read ``row`` at
        monotonic time ``mono``; sets :attr:`asleep` to that."""
        if self._tick_at is not None and mono > self._tick_at:
            self.watched_seconds += mono - self._tick_at
            if self.asleep:
                self.quiet_seconds += mono - self._tick_at
        self._tick_at = mono
        moved = row is None
        cells = self.cells_begun
        if cells != self._cells_seen:
            self._cells_seen = cells
            moved = True
        if row is not None:
            for i in self._util:
                if row[i]:  # (None or 0: idle)
                    moved = True
            last = self._last
            for k, (i, slack) in enumerate(self._moved):
                value, was = row[i], last[k]
                if value is not None and (was is None or abs(value - was) > slack):
                    last[k] = value
                    moved = True
        if moved or self.cell_running or not self.idle_interval or self._busy():
            self._since = mono
            self.asleep = False
            return False
        self.asleep = mono - self._since >= self._after
        # (set before this read: a cell that began meanwhile either sees it and wakes the
        # sampler, or is seen here)
        if self.cell_running:
            self.asleep = False
        return self.asleep
