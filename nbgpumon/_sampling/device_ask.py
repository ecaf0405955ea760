"""The device's figures for the main thread (a cell's hooks, magics, views): asked on a thread of
their own and waited for at most ``ASK_WAIT``. They are not waited for at all while the driver is
not answering (DESIGN invariant 11: the main thread never waits on a driver)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from .._sources.devices.protocol import (
    DeviceSource,
    GpuProcess,
    HangWatchRole,
    MigRole,
    ProcessRole,
    role,
)
from .bounded_call import NO_ANSWER, BoundedCall

T = TypeVar("T")
# The longest the main thread waits for an answer: a healthy driver answers a memory read in
# ~8 µs, and a busy two-core machine hands a thread over in milliseconds; a stuck driver costs
# this once, then nothing until it answers again.
ASK_WAIT = 0.2


class DeviceAsk:
    """What the main thread asks of a device source; None where it did not answer in time."""

    def __init__(self, devices: DeviceSource, wait: float = ASK_WAIT) -> None:
        self.device_source = devices
        self.wait = wait
        # its optional roles, asked once: None where it has none
        self.mig: MigRole | None = role(devices, MigRole)
        self.lister: ProcessRole | None = role(devices, ProcessRole)
        self.hang_watch: HangWatchRole | None = role(devices, HangWatchRole)
        watch = self.hang_watch
        # bound once, so that an ask pays one call either way (no role: always answering)
        self._silent = watch.not_answering_for if watch is not None else _always_answering
        self._call = BoundedCall(f"nbgpumon-{devices.name}-ask")
        # what a record and a view say of a figure it lacks: "NVML not answering"
        self.not_answering = f"{devices.label} not answering"

    def silent_for(self) -> float:
        """Seconds the device source has not answered, the sampler's reads and these asks alike (0.0
        while it answers)."""
        now = time.monotonic()
        busy = self._call.busy_for(now)  # an ask left running past its deadline
        silent = self._silent(now)
        return max(silent, busy) if silent or busy > self.wait else 0.0

    def memory_used(self) -> list[int | None] | None:
        """Device memory used per device now, bytes (a cell's start and end readings)."""
        return self._ask(self.device_source.read_memory)

    def free(self) -> list[int | None] | None:
        """Device memory free per device now, bytes."""
        return self._ask(self.device_source.read_free)

    def processes(self) -> list[GpuProcess] | None:
        """The GPUs' processes now, as the driver lists them ([] from a source that lists
        none: ``lister`` is None)."""
        lister = self.lister
        return self._ask(lister.read_processes) if lister is not None else []

    def mig_used(self, migs: list[Any]) -> list[int | None] | None:
        """Each of ``migs``' memory in use now, bytes (None from a source without MIG)."""
        mig = self.mig
        return self._ask(lambda: mig.read_mig_used(migs)) if mig is not None else None

    def asking(self) -> bool:
        """Whether its worker is in a call to the device source now (an ask, or the start)."""
        return bool(self._call.since)

    def close(self) -> None:
        """The worker ends after the call it is in, if any; nothing is waited for."""
        self._call.close()

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` now, or on the worker once the ask it is in returns."""
        self._call.when_idle(callback)

    def run(self, work: Callable[[], T], wait: float) -> T | None:
        """Runs ``work()`` on the worker, waited for at most ``wait`` seconds (None: no answer by
        then, and it goes on in the background). For the load's ``DeviceSource.open``."""
        got: Any = self._call.call(work, wait)
        return None if got is NO_ANSWER else got

    def _ask(self, work: Callable[[], T]) -> T | None:
        if not self.device_source.devices:
            return work()  # no device: no call to wait for
        if self.silent_for():
            self._call.start(work)  # a probe: a quick answer ends the silence for the next ask
            return None
        got: Any = self._call.call(work, self.wait)
        return None if got is NO_ANSWER else got


def _always_answering(now: float | None = None) -> float:
    """How long a source without the hang watch role keeps a caller waiting: never."""
    return 0.0
