"""A call put off until the kernel has sent a cell's reply. It runs on the kernel's event loop,
on the main thread, before the kernel reads its next message (ipykernel 6 and 7, as Jupyter, VS
Code, Colab and Voilà run it). A terminal IPython, or a cell run in a subshell's thread, has no
such loop: there the call is not put off."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from .._session.cell_pipeline import AfterReply


def after_reply_of(shell: Any) -> AfterReply | None:
    """What puts a call off until the reply of the cell now ending is sent, for ``shell``'s
    kernel; None where it has no event loop to put it on."""
    loop = getattr(getattr(shell, "kernel", None), "io_loop", None)  # tornado's IOLoop
    if getattr(loop, "asyncio_loop", None) is None:
        return None

    def put_off(call: Callable[[], None]) -> bool:
        # The kernel's loop runs the cell (post_run_cell comes inside its handler): a call
        # queued now runs when that handler has sent the reply and the idle status, before
        # the loop takes the next message (queued after it).
        if threading.current_thread() is not threading.main_thread():
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if running is not loop.asyncio_loop:
            return False
        running.call_soon(call)
        return True

    return put_off
