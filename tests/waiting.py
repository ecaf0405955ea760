"""The one way a test waits: poll a condition until it holds or a deadline passes (never a
fixed sleep followed by one read)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE = 30.0  # seconds an awaited condition gets unless a test says otherwise


def until(
    condition: Callable[[], T], what: str, timeout: float = DEADLINE, every: float = 0.02
) -> T:
    """``condition()``'s first truthy value, asked every ``every`` s; AssertionError naming
    ``what`` after ``timeout`` s (the condition is asked once more at the deadline)."""
    deadline = time.monotonic() + timeout
    while not (found := _asked(condition, what, timeout, deadline)):
        time.sleep(every)
    return found


async def until_async(
    condition: Callable[[], T], what: str, timeout: float = DEADLINE, every: float = 0.001
) -> T:
    """:func:`until`, for a test that runs an event loop: the loop runs while it waits."""
    import asyncio

    deadline = time.monotonic() + timeout
    while not (found := _asked(condition, what, timeout, deadline)):
        await asyncio.sleep(every)
    return found


def _asked(condition: Callable[[], T], what: str, timeout: float, deadline: float) -> T:
    """``condition()``; AssertionError naming ``what`` where it is false past ``deadline``."""
    found = condition()
    if not found and time.monotonic() > deadline:
        raise AssertionError(f"waited {timeout:g} s for {what}")
    return found
