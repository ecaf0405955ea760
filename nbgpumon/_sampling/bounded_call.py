"""A call made on a worker thread of its own, waited for at most a deadline.

Why: a driver in a bad state can take seconds to answer any call, and the main thread (a
cell's hooks, a magic, a view) must never wait on a driver (DESIGN invariant 11). The worker
makes the call; the caller waits until the deadline and goes on without the answer. One call
at a time: while one is still in the driver, the next is refused at once rather than queued
behind it, so a stuck driver costs the caller nothing after its first deadline. Each call has
its own answer, so two threads asking at once never get each other's (the second is refused).

Fork-safe without a fork hook: a child has no worker thread, which the next call finds
(``is_alive`` is False in the child) and replaces, with fresh primitives; the guard is only
ever taken with a timeout, so one held by another thread at the fork refuses, never hangs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

CLOSE_WAIT = 0.1  # seconds close() waits for an idle worker to end (it takes microseconds)
GUARD_WAIT = 0.05  # seconds to wait for the guard, held only while a call is handed over
NO_ANSWER: Any = object()  # what call() gives when the answer did not come by the deadline


class _Ticket:
    """One call's answer, set by the worker."""

    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Any = NO_ANSWER


class BoundedCall:
    """Runs one function at a time on a daemon thread named ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()  # the hand-over: since, _work, _after
        self._work: tuple[Callable[[], Any], _Ticket] | None = None
        self._after: list[Callable[[], None]] = []  # run once the call in progress returns
        self._wake = threading.Semaphore(0)  # released once per call given to the worker
        self.since = 0.0  # monotonic time the call in progress began; 0.0 when none is
        self._closed = False

    def busy_for(self, now: float | None = None) -> float:
        """Seconds the call in progress has run (0.0: the worker is free)."""
        since = self.since
        return 0.0 if not since else (time.monotonic() if now is None else now) - since

    def call(self, work: Callable[[], Any], deadline: float) -> Any:
        """``work()``'s answer, or NO_ANSWER when it took over ``deadline`` seconds, or when
        the worker is still in an earlier call (then ``work`` is not made at all)."""
        ticket = self._hand_over(work)
        if ticket is not None and deadline > 0 and ticket.done.wait(deadline):
            return ticket.answer
        return NO_ANSWER

    def start(self, work: Callable[[], Any]) -> bool:
        """Hand ``work`` to the worker without waiting; False when it is busy."""
        return self._hand_over(work) is not None

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` now if no call is in progress, else on the worker once that call
        returns (never under it: the callback may be the driver's shutdown)."""
        if self._guard.acquire(timeout=GUARD_WAIT):
            try:
                if self.since and self._alive():
                    self._after.append(callback)
                    return
            finally:
                self._guard.release()
        callback()

    def close(self) -> None:
        """Let the worker end (after the call it is in, if any). An idle worker is waited for
        (it ends at once), so that no thread of an unloaded monitor is left to be seen; one
        still in a call is not: that call may never come back."""
        self._closed = True
        self._wake.release()
        thread = self._thread
        if thread is not None and not self.since and thread is not threading.current_thread():
            thread.join(timeout=CLOSE_WAIT)

    def _hand_over(self, work: Callable[[], Any]) -> _Ticket | None:
        if self._closed or not self._guard.acquire(timeout=GUARD_WAIT):
            return None
        try:
            if self.since:
                if self._alive():
                    return None  # busy: refused, not queued
                self._thread = None  # a forked child: the parent's worker is not here
            if not self._alive():
                self._wake = threading.Semaphore(0)
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            ticket = _Ticket()
            self._work = (work, ticket)
            self.since = time.monotonic()
            self._wake.release()
            return ticket
        finally:
            self._guard.release()

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        wake = self._wake
        while True:
            wake.acquire()
            job, self._work = self._work, None
            if job is not None:
                work, ticket = job
                try:
                    ticket.answer = work()
                except Exception:  # what it calls never raises; if it did, no answer
                    ticket.answer = NO_ANSWER
                ticket.done.set()
            with self._guard:
                self.since = 0.0
                after, self._after = self._after, []
            for callback in after:
                with contextlib.suppress(Exception):
                    callback()
            if self._closed:
                return
