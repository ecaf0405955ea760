"""A call put off until the kernel has sent a cell's reply and idle status. It runs on the
kernel's event loop, on the main thread, a moment after the cell's end (ipykernel 6 and 7, as
Jupyter, VS Code, Colab and Voilà run it); a message that comes first (the next cell of a Run
All) is handled before it. A terminal IPython, or a cell run in a subshell's thread, has no such
loop: there the call is not put off."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .._session.cell_pipeline import AfterReply

# Seconds the call waits after the cell's end before it is queued behind the cell's idle status.
# The rest of the cell's handler (its reply, its idle status) runs on the same loop, so anything
# timed later comes after it; the idle status is then sent by the kernel's IOPub thread, which
# runs what it is given in order: the call, queued there, is handed back to the main thread only
# once that status has gone out. Work begun before it is sent holds it back (the IOPub thread
# needs the GIL), and the client waits for it after all (bench/after_reply_order.py).
HANDLER_DONE = 0.001
# Seconds the call waits where the kernel has no IOPub thread to queue it behind: long enough
# for the reply and the idle status to go out first (on a 2-core VM, 2 ms was not; 10 ms was
# in 149 of 150 cells, docs/benchmarks.md).
SETTLE = 0.01


def after_reply_of(shell: Any) -> AfterReply | None:
    """What puts a call off until the reply of the cell now ending is sent, for ``shell``'s
    kernel; None where it has no event loop to put it on."""
    kernel = getattr(shell, "kernel", None)
    loop = getattr(kernel, "io_loop", None)  # tornado's IOLoop
    if getattr(loop, "asyncio_loop", None) is None:
        return None
    iopub = getattr(kernel, "iopub_thread", None)  # ipykernel's IOPubThread
    if not callable(getattr(iopub, "schedule", None)):
        iopub = None

    held: list[tuple[Callable[[], None], Held]] = []  # the last call, as held (made once)
    main = threading.main_thread().ident

    def put_off(call: Callable[[], None]) -> bool:
        # The kernel's loop runs the cell (post_run_cell comes inside its handler): a call
        # timed now runs once that handler has sent the reply and the idle status.
        if threading.get_ident() != main:
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if running is not loop.asyncio_loop:
            return False
        if not held or held[0][0] != call:  # (the same bound method each cell: held once)
            held[:] = [(call, _weakly(call))]
        if iopub is None:
            running.call_later(SETTLE, _call_if_alive, held[0][1])
        else:
            running.call_later(HANDLER_DONE, _behind_idle_status, iopub, running, held[0][1])
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


def _behind_idle_status(iopub: Any, loop: asyncio.AbstractEventLoop, held: Held) -> None:
    """Queue the call on the IOPub thread, behind the cell's idle status (main thread, once the
    cell's handler is done); where that thread cannot take it, the call waits as without one."""

    def hand_back() -> None:  # (on the IOPub thread: it must not raise there)
        with contextlib.suppress(Exception):  # (the loop closed: the kernel shuts down)
            loop.call_soon_threadsafe(_call_if_alive, held)

    try:
        iopub.schedule(hand_back)
    except Exception:
        loop.call_later(SETTLE - HANDLER_DONE, _call_if_alive, held)


def _call_if_alive(held: Held) -> None:
    call = held()
    if call is not None:
        call()
