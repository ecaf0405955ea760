"""A call put off until the kernel has sent a cell's reply. It runs on the kernel's event loop,
on the main thread, a moment after the cell's end (ipykernel 6 and 7, as Jupyter, VS Code, Colab
and Voilà run it); a message that comes first (the next cell of a Run All) is handled before it.
A terminal IPython, or a cell run in a subshell's thread, has no such loop: there the call is not
put off."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .._session.cell_pipeline import AfterReply

# Seconds the call waits after the cell's end. The reply and the idle status go out through the
# kernel's other threads, which need the GIL: a call run at once held them back (on a 2-core VM
# it began before the client had its idle status in 146 of 150 cells; 2 ms: 145; 5 ms: 5;
# 10 ms: 1, bench/after_reply_order.py, docs/benchmarks.md). Cells sent at once do not wait for
# it: the next one's start finishes it first.
SETTLE = 0.01


def after_reply_of(shell: Any) -> AfterReply | None:
    """What puts a call off until the reply of the cell now ending is sent, for ``shell``'s
    kernel; None where it has no event loop to put it on."""
    loop = getattr(getattr(shell, "kernel", None), "io_loop", None)  # tornado's IOLoop
    if getattr(loop, "asyncio_loop", None) is None:
        return None

    held: list[tuple[Callable[[], None], Held]] = []  # the last call, as held (made once)

    def put_off(call: Callable[[], None]) -> bool:
        # The kernel's loop runs the cell (post_run_cell comes inside its handler): a call
        # timed now runs once that handler has sent the reply and the idle status.
        if threading.current_thread() is not threading.main_thread():
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if running is not loop.asyncio_loop:
            return False
        if not held or held[0][0] != call:  # (the same bound method each cell: held once)
            held[:] = [(call, _weakly(call))]
        running.call_later(SETTLE, _call_if_alive, held[0][1])
        return True

    return put_off


Held = Callable[[], Callable[[], None] | None]


def _weakly(call: Callable[[], None]) -> Held:
    """``call``, held weakly where it is a bound method: the loop's timer then keeps no monitor
    alive that was unloaded before it fired (its end was finished at the unload)."""
    try:
        return weakref.WeakMethod(call)  # type: ignore[arg-type]
    except TypeError:  # (not a bound method)
        return lambda: call


def _call_if_alive(held: Held) -> None:
    call = held()
    if call is not None:
        call()
