"""A quiet cell's put-off end is queued on ipykernel's IOPub thread behind the cell's idle
status, and runs on the main thread only once that status is sent (issue 43): with an IOPub
thread that runs what it is given in order, on its own thread, as ipykernel's does
(``IOPubThread.schedule``), held shut until the test opens it. Each runs in a Python of its own:
its main thread must have no event loop running (a browser test's Playwright leaves one)."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import threading
from types import SimpleNamespace

from nbgpumon._ipython import after_reply

from waiting import until_async


class GatedIOPub:
    """Runs scheduled functions in order on a thread of its own, once ``gate`` is set."""

    def __init__(self) -> None:
        self.events: collections.deque = collections.deque()
        self.gate = threading.Event()
        self.wake = threading.Event()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def schedule(self, f) -> None:
        self.events.append(f)
        self.wake.set()

    def _run(self) -> None:
        while not self.stopped:
            self.wake.wait()
            self.gate.wait()
            self.wake.clear()
            while self.events:
                self.events.popleft()()

    def stop(self) -> None:
        self.stopped = True
        self.gate.set()
        self.wake.set()


class Cell:
    """The put-off call: where and after what it ran."""

    def __init__(self, happened: list[str]) -> None:
        self.happened = happened
        self.thread: threading.Thread | None = None

    def finish(self) -> None:
        self.thread = threading.current_thread()
        self.happened.append("put-off end")


def _kernel(loop: asyncio.AbstractEventLoop, iopub) -> SimpleNamespace:
    return SimpleNamespace(
        kernel=SimpleNamespace(io_loop=SimpleNamespace(asyncio_loop=loop), iopub_thread=iopub)
    )


def test_a_put_off_end_runs_on_the_main_thread_once_the_idle_status_is_sent():
    _in_own_process("queued_behind_the_idle_status")


def test_without_an_iopub_thread_that_takes_it_the_end_waits_a_fixed_delay():
    _in_own_process("a_fixed_delay")


def _in_own_process(scenario: str) -> None:
    done = subprocess.run(
        [sys.executable, __file__, scenario], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def queued_behind_the_idle_status() -> None:
    iopub = GatedIOPub()
    loop = asyncio.new_event_loop()
    happened: list[str] = []
    cell = Cell(happened)
    put_off = after_reply.after_reply_of(_kernel(loop, iopub))
    assert put_off is not None

    async def a_cell_and_its_reply() -> None:
        assert put_off(cell.finish)  # (post_run_cell, inside the cell's handler)
        iopub.schedule(lambda: happened.append("idle status sent"))  # (the handler's last act)
        # the put-off call is queued behind the status once the handler is done...
        await until_async(lambda: len(iopub.events) == 2, "the call queued behind the status")
        assert happened == []  # ...and nothing runs while the IOPub thread is held
        iopub.gate.set()
        await until_async(lambda: cell.thread is not None, "the put-off end to run")

    try:
        loop.run_until_complete(a_cell_and_its_reply())
    finally:
        iopub.stop()
        loop.close()
    assert happened == ["idle status sent", "put-off end"]
    assert cell.thread is threading.main_thread()


def _waited_without_queue(iopub) -> tuple[float, threading.Thread | None]:
    """Seconds from a put-off to its call, and the call's thread, with ``iopub`` as the
    kernel's IOPub thread."""
    loop = asyncio.new_event_loop()
    cell = Cell([])
    put_off = after_reply.after_reply_of(_kernel(loop, iopub))
    assert put_off is not None

    async def a_cell() -> float:
        started = loop.time()
        assert put_off(cell.finish)
        await until_async(lambda: cell.thread is not None, "the put-off end to run")
        return loop.time() - started

    try:
        return loop.run_until_complete(a_cell()), cell.thread
    finally:
        loop.close()


def a_fixed_delay() -> None:
    class Refusing:
        def schedule(self, f) -> None:
            raise RuntimeError("closed")

    for iopub in (None, Refusing()):
        waited, thread = _waited_without_queue(iopub)
        assert waited >= after_reply.SETTLE * 0.9, (iopub, waited)
        assert thread is threading.main_thread()


if __name__ == "__main__":
    {
        "queued_behind_the_idle_status": queued_behind_the_idle_status,
        "a_fixed_delay": a_fixed_delay,
    }[sys.argv[1]]()
