"""A call made on a worker thread of its own, waited for at most a deadline.

Why: a driver in a bad state can take seconds to answer any call, and the main thread (a
cell's hooks, a magic, a view) must never wait on a driver (DESIGN invariant 11). The worker
makes the call; the caller waits until the deadline and goes on without the answer. One call
at a time: while one is still in the driver, the next is refused at once rather than queued
behind it, so a stuck driver costs the caller nothing after its first deadline.

Fork-safe without a fork hook: a child has no worker thread, which the next call finds
(``is_alive`` is False in the child) and replaces, with fresh primitives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

CLOSE_WAIT = 0.1  # seconds close() waits for an idle worker to end (it takes microseconds)
NO_ANSWER: Any = object()  # what call() gives when the answer did not come by the deadline


class BoundedCall:
    """Runs one function at a time on a daemon thread named ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._work: Callable[[], Any] | None = None
        self._answer: Any = NO_ANSWER
        self._wake = threading.Semaphore(0)  # released once per call given to the worker
        self._done = threading.Event()
        self.since = 0.0  # monotonic time the call in progress began; 0.0 when none is
        self._closed = False

    def busy_for(self, now: float | None = None) -> float:
        """Seconds the call in progress has run (0.0: the worker is free)."""
        since = self.since
        return 0.0 if not since else (time.monotonic() if now is None else now) - since

    def call(self, work: Callable[[], Any], deadline: float) -> Any:
        """``work()``'s answer, or NO_ANSWER when it took over ``deadline`` seconds, or when
        the worker is still in an earlier call (then ``work`` is not made at all)."""
        if self._closed or not self.start(work):
            return NO_ANSWER
        if deadline > 0 and self._done.wait(deadline):
            return self._answer
        return NO_ANSWER

    def start(self, work: Callable[[], Any]) -> bool:
        """Hand ``work`` to the worker without waiting; False when it is busy."""
        if self._closed or self.since:
            if self.since and not self._alive():  # a forked child: the parent's worker
                self._thread = None
            else:
                return False
        if not self._alive():
            self._wake, self._done = threading.Semaphore(0), threading.Event()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        self._done.clear()
        self._answer = NO_ANSWER
        self._work = work
        self.since = time.monotonic()
        self._wake.release()
        return True

    def close(self) -> None:
        """Let the worker end (after the call it is in, if any). An idle worker is waited for
        (it ends at once), so that no thread of an unloaded monitor is left to be seen; one
        still in a call is not: that call may never come back."""
        self._closed = True
        self._work = None
        self._wake.release()
        thread = self._thread
        if thread is not None and not self.since and thread is not threading.current_thread():
            thread.join(timeout=CLOSE_WAIT)

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        wake, done = self._wake, self._done
        while True:
            wake.acquire()
            work = self._work
            if self._closed or work is None:
                self.since = 0.0
                return
            self._work = None
            try:
                self._answer = work()
            except Exception:  # what it calls never raises; if it did, no answer
                self._answer = NO_ANSWER
            done.set()  # before the worker is free: a next call's clear() comes after this
            self.since = 0.0
