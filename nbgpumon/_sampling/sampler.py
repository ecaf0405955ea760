"""The one long-lived thread: it ticks, reads the sources, appends to the timeline.

It never prints and never touches a display; failures become ``status``. Subscribers (a
widget publisher, later) are called with the timeline cursor after each tick and must be
quick. Fork-safe: locks are taken before ``fork()`` and the child starts with no sampler.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable

from .._sources.host import HostSource
from .._sources.nvml import GpuProcess, NvmlSource
from .._sources.torch_allocator import TorchAllocatorSource
from .timeline import Timeline, wall_clock

Subscriber = Callable[[int], None]

MIN_INTERVAL = 0.01  # seconds; faster than 100 Hz costs more than it shows
MAX_INTERVAL = 60.0


class Sampler:
    """Reads sources every ``interval`` seconds into ``timeline`` on a daemon thread."""

    def __init__(
        self,
        nvml: NvmlSource,
        torch: TorchAllocatorSource,
        host: HostSource,
        timeline: Timeline,
        interval: float = 0.1,
        slow_interval: float = 2.0,
        torch_interval: float = 0.5,
        detail_interval: float = 1.0,
    ) -> None:
        self.nvml, self.torch, self.host = nvml, torch, host
        self.timeline = timeline
        self.interval = interval
        self.slow_interval = slow_interval
        self.torch_interval = torch_interval
        self.detail_interval = detail_interval
        self.processes: list[GpuProcess] = []
        self.ticks = 0
        self.last_tick_seconds = 0.0  # wall time of the last tick's reads
        self.error = ""  # the last exception a tick contained, for status
        self._subscribers: list[Subscriber] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # held for the duration of a tick
        n_gpu = len(nvml.devices)
        self._n_nvml = len(nvml.columns)
        self._torch_row: list[float | None] = [None] * (n_gpu * len(torch.columns))
        self._host_slow: tuple[int | None, int | None] = (None, None)
        self._next_slow = 0.0
        self._next_torch = 0.0
        self._next_detail = 0.0
        self._cuda_mapped = False
        _live_samplers.add(self)

    # -- control --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread; does nothing when it already runs."""
        if self.running:
            return
        # Each thread gets its own stop event: one stuck in a slow driver call past stop()'s
        # timeout still ends when that call returns, and never runs beside its successor.
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name="nbgpumon-sampler", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread and wait for it (at most ``timeout`` seconds)."""
        thread = self._thread
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    def set_interval(self, seconds: float) -> None:
        """Change the tick interval; the sleeping thread wakes to use it at once."""
        if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
            raise ValueError(f"interval must be between {MIN_INTERVAL} and {MAX_INTERVAL} s")
        self.interval = seconds
        self._wake.set()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(cursor)`` after every tick; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    # -- the thread -----------------------------------------------------------------------
    def _run(self, stop: threading.Event) -> None:
        next_tick = time.monotonic()
        while not stop.is_set():
            self.tick()
            next_tick += self.interval
            delay = next_tick - time.monotonic()
            if delay < 0:  # fell behind (suspended, slow driver): skip, don't burst
                next_tick = time.monotonic()
                delay = 0
            self._wake.wait(delay)
            self._wake.clear()

    def tick(self) -> None:
        """One round of reads; callable directly (tests, benchmarks). Never raises."""
        with self._lock:
            started = time.perf_counter()
            try:
                self._read_into_timeline()
                self.error = ""
            except Exception as exc:  # contained: the thread must outlive any one bad read
                self.error = f"{type(exc).__name__}: {exc}"
            self.last_tick_seconds = time.perf_counter() - started
            self.ticks += 1
        cursor = self.timeline.cursor
        for callback in list(self._subscribers):
            try:
                callback(cursor)
            except Exception as exc:
                self.error = f"subscriber failed: {type(exc).__name__}: {exc}"

    def _read_into_timeline(self) -> None:
        now = wall_clock()
        mono = time.monotonic()
        if mono >= self._next_slow:
            self._next_slow = mono + self.slow_interval
            self._read_slow()
        if mono >= self._next_torch:
            self._next_torch = mono + self.torch_interval
            self._read_torch()
        details = mono >= self._next_detail
        if details:
            self._next_detail = mono + self.detail_interval
        row: list[float | None] = self.nvml.read(details)
        row.extend(self._torch_row)
        row.append(self.host.rss())
        row.extend(self._host_slow)
        self.timeline.append(now, row)

    def _read_torch(self) -> None:
        if not self.torch.active():
            return
        if not self._cuda_mapped:
            self.nvml.remap_cuda(self.torch.device_uuids())
            self._cuda_mapped = True
        width = len(self.torch.columns)
        for device in self.nvml.devices:
            if device.cuda_index is None:
                continue
            stats = self.torch.read(device.cuda_index)
            if stats is not None:
                at = device.nvml_index * width
                self._torch_row[at : at + width] = [
                    stats.allocated,
                    stats.reserved,
                    stats.active,
                    stats.inactive_split,
                ]

    def _read_slow(self) -> None:
        self.nvml.read_slow()
        self._host_slow = self.host.system()
        self.processes = self.nvml.read_processes()

    # -- fork safety ----------------------------------------------------------------------
    def _before_fork(self) -> None:
        self._lock.acquire()
        self.timeline._lock_for_fork()

    def _after_fork(self, child: bool) -> None:
        self.timeline._unlock_after_fork(child)
        if child:
            # The thread does not exist in the child; leave it stopped, with fresh primitives.
            self._lock = threading.Lock()
            self._stop = threading.Event()
            self._wake = threading.Event()
            self._thread = None
            self._subscribers = []
        else:
            self._lock.release()


def timeline_columns(nvml: NvmlSource, torch: TorchAllocatorSource, host: HostSource) -> list[str]:
    """Column names in the order :meth:`Sampler._read_into_timeline` fills a row."""
    cols = [f"gpu{d.nvml_index}.{m}" for d in nvml.devices for m in nvml.columns]
    cols += [f"gpu{d.nvml_index}.{m}" for d in nvml.devices for m in torch.columns]
    cols += [f"host.{m}" for m in host.columns]
    return cols


_live_samplers: weakref.WeakSet[Sampler] = weakref.WeakSet()
_forking: list[Sampler] = []  # the samplers whose locks are held across one fork()


def _before_fork() -> None:
    _forking[:] = list(_live_samplers)
    for sampler in _forking:
        sampler._before_fork()


def _after_fork_parent() -> None:
    for sampler in _forking:
        sampler._after_fork(child=False)
    _forking.clear()


def _after_fork_child() -> None:
    for sampler in _forking:
        sampler._after_fork(child=True)
    _forking.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child
    )
