"""The device source's start at ``%load_ext``: waited for with a deadline, so that a driver
that does not answer leaves a session without GPUs rather than a kernel that hangs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .._sampling.device_ask import DeviceAsk
from .._sampling.sampler import Sampler
from .._sources.devices.protocol import DeviceSource

# Seconds %load_ext waits for the device source to start and list its GPUs (a healthy driver:
# ~10 ms); past it the session goes on without GPUs and the start carries on in the background.
OPEN_WAIT = 1.0


class TimedStart:
    """A device source's ``open()``, timed as it runs: still starting, or how long it took. It
    times the start itself, so that any source's late start is told (a source's own clocks are
    an optional role)."""

    def __init__(self, source: DeviceSource) -> None:
        self.source = source
        self.since = time.monotonic()  # (made as the start is handed to the worker)
        self.took: float | None = None  # seconds it took; None while it runs

    def __call__(self) -> bool:
        try:
            return self.source.open()
        finally:
            self.took = time.monotonic() - self.since


def open_devices(
    new_source: Callable[[], DeviceSource],
) -> tuple[DeviceSource, DeviceAsk, TimedStart | None]:
    """A device source started on a worker, waited for at most OPEN_WAIT, and its asker. A
    driver that does not answer by then gives a source never opened (no GPU: the timeline's
    columns are fixed at load), and the start still running, whose answer status reports. The
    monitor tells the source never opened why, in the views' words (``started_late``)."""
    source = new_source()
    ask = DeviceAsk(source)
    start = TimedStart(source)
    if ask.run(start, OPEN_WAIT) is not None:
        return source, ask, None
    ask.close()  # its worker ends when the start returns
    idle = new_source()  # never opened: no device, no call to its library
    return idle, DeviceAsk(idle), start


@dataclass(frozen=True, slots=True)
class LateStart:
    """A device source still starting after OPEN_WAIT at load, for status: how that went."""

    label: str  # how users write the source ("NVML")
    answered: bool  # False: still starting
    seconds: float  # since its start waited (still starting), else how long the start took
    available: bool  # it started and reads (else ``status`` says why not)
    status: str  # its own status
    gpus: int  # the devices it found, which only a new session watches


def started_late(late: TimedStart | None) -> LateStart | None:
    """Where the device source was still starting after OPEN_WAIT: how that went (None if it
    started in time)."""
    if late is None:
        return None
    source, took = late.source, late.took
    if took is None:
        return LateStart(
            source.label, False, time.monotonic() - late.since, False, source.status, 0
        )
    return LateStart(source.label, True, took, source.available, source.status, len(source.devices))


def close_devices(source: DeviceSource, ask: DeviceAsk, sampler: Sampler, stopped: bool) -> None:
    """Release the device source at once, or, where a thread is still in a call to it, once
    that call returns (never waited for): shutting it down under that call is no fix."""
    if stopped and not ask.asking():
        source.close()
    else:  # once the sampler's thread has ended, and then once the ask's worker is out of it
        sampler.when_ended(lambda: ask.when_idle(source.close))
