"""The device source's start at ``%load_ext``: waited for with a deadline, so that a driver
that does not answer leaves a session without GPUs rather than a kernel that hangs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._sampling.device_ask import DeviceAsk
from .._sampling.sampler import Sampler
from .._sources.devices.protocol import DeviceSource

# Seconds %load_ext waits for the device source to start and list its GPUs (a healthy driver:
# ~10 ms); past it the session goes on without GPUs and the start carries on in the background.
OPEN_WAIT = 1.0


def open_devices(
    new_source: Callable[[], DeviceSource],
) -> tuple[DeviceSource, DeviceAsk, DeviceSource | None]:
    """A device source started on a worker, waited for at most OPEN_WAIT, and its asker. A
    driver that does not answer by then gives a source never opened (no GPU: the timeline's
    columns are fixed at load), and the one still starting, whose answer status reports. The
    monitor tells the source never opened why, in the views' words (``started_late``)."""
    source = new_source()
    ask = DeviceAsk(source)
    if ask.run(source.open, OPEN_WAIT) is not None:
        return source, ask, None
    ask.close()  # its worker ends when the start returns
    idle = new_source()  # never opened: no device, no call to its library
    return idle, DeviceAsk(idle), source


@dataclass(frozen=True, slots=True)
class LateStart:
    """A device source still starting after OPEN_WAIT at load, for status: how that went."""

    label: str  # how users write the source ("NVML")
    answered: bool  # False: still starting
    seconds: float  # since its start waited (still starting), else how long the start took
    available: bool  # it started and reads (else ``status`` says why not)
    status: str  # its own status
    gpus: int  # the devices it found, which only a new session watches


def started_late(late: DeviceSource | None) -> LateStart | None:
    """Where the device source was still starting after OPEN_WAIT: how that went (None if it
    started in time)."""
    if late is None:
        return None
    if late.reading_since:
        return LateStart(late.label, False, late.not_answering_for(), False, late.status, 0)
    return LateStart(
        late.label, True, late.last_took, late.available, late.status, len(late.devices)
    )


def close_devices(source: DeviceSource, ask: DeviceAsk, sampler: Sampler, stopped: bool) -> None:
    """Release the device source at once, or, where a thread is still in a call to it, once
    that call returns (never waited for): shutting it down under that call is no fix."""
    if stopped and not source.asking_since:
        source.close()
    else:  # once the sampler's thread has ended, and then once the ask's worker is out of it
        sampler.when_ended(lambda: ask.when_idle(source.close))
