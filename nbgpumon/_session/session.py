"""``Session`` assembles one kernel's nbgpumon: the device source, the allocators, the sampler, the
timeline, the ledger and the controllers (cells, recording, cluster, tracing and NVTX, memory). It
passes the configuration's changes on to them. It knows nothing of IPython or of views: the shell
comes in as a callable that returns it (or None), and views are added one layer up (``Monitor``).
What only some sessions use is imported on first use."""

from __future__ import annotations

import atexit
import functools
import os
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from traitlets import TraitError

from .._forensics.tracing_answer import TracingState
from .._foundation.errors import RecordingError, UsageError
from .._foundation.metrics import metric
from .._ledger.ledger import Ledger
from .._ledger.records import CellRecord
from .._recording.notices import RecorderState, RecordingChange
from .._sampling.node_timeline import NodeTimeline
from .._sampling.quiet import QuietWatch
from .._sampling.sampler import Sampler, timeline_columns
from .._sampling.timeline import Timeline
from .._sources.allocator_columns import AllocatorColumns
from .._sources.base import ALLOCATOR, DETAIL, SLOW, AllocatorSource
from .._sources.devices import source_maker
from .._sources.devices.protocol import (
    CallCountRole,
    CudaMappingRole,
    DeviceSource,
    DiagnosticsRole,
    role,
)
from .._sources.frameworks import frameworks, plugin_settings
from .._sources.host import HostSource
from .._sources.processes.source import ProcessSource
from .cell_pipeline import CellPipeline
from .config import GPUMon
from .controls.children import ChildrenControl
from .controls.cluster import SETTINGS as CLUSTER_SETTINGS
from .controls.cluster import ClusterControl
from .controls.memory import MemoryControl
from .controls.nvtx_ranges import NvtxRanges
from .controls.recording import RecordingControl
from .controls.tracing import TracingControl
from .device_open import LateStart, close_devices, open_devices, started_late
from .facts.settings import SettingOutcome
from .facts.status import ExporterFacts
from .info import session_info
from .live_data import LiveData
from .live_status import live_status

_LIVE_SETTINGS = [
    "interval", "allocator_interval", "detail_interval", "slow_interval", "process_interval",
    "idle_interval", "peak_mode",
    "record_path", "prometheus_url", "prometheus_match", "cluster_interval",
    "cluster_timeout", "cluster_host_label", "nvtx",
    *(setting.name for _, setting in plugin_settings()),  # the plug-ins' own (cupy_peak_hook)
]  # fmt: skip
# a plug-in's own setting -> (its plug-in's name, the setting): passed on to its source
_PLUGIN_SETTINGS = {setting.name: (plugin.name, setting) for plugin, setting in plugin_settings()}
_INTERVALS = {"allocator_interval": ALLOCATOR, "detail_interval": DETAIL, "slow_interval": SLOW}
FIRST_SAMPLE_WAIT = 2.0  # seconds a snapshot or a new exporter waits for the first sample
# Seconds close() (%unload_ext) waits for the sampler's thread; one stuck in the driver ends
# when its call returns, writing nothing.
CLOSE_WAIT = 0.5


def _no_exporter() -> ExporterFacts | None:
    return None


def no_shell() -> Any:
    """The shell of a process without IPython: none."""
    return None


class Session:
    """Everything nbgpumon measures in this process. Usable without IPython."""

    def __init__(
        self,
        config: GPUMon | None = None,
        nvml_module: ModuleType | None = None,
        shell: Callable[[], Any] = no_shell,
        new_device_source: Callable[[], DeviceSource] | None = None,
    ) -> None:
        self.config = cfg = config if config is not None else GPUMon()
        # ``shell``: the running shell (namespace, Out, tracebacks), or None.
        # The device source: the plug-in GPUMon.device_source names, given ``nvml_module``
        # (the fault tests' fake library), or what ``new_device_source`` makes. The main thread
        # asks it with a deadline; _late_start: one not started by then.
        new_source = new_device_source or source_maker(cfg.take_device_source(), nvml_module)
        self.device_source, self.device_ask, self._late_start = open_devices(new_source)
        # its optional roles of status's and the allocators', asked once (None: it has none)
        self.diagnostics = role(self.device_source, DiagnosticsRole)
        self.cuda_mapping = role(self.device_source, CudaMappingRole)
        # each framework's own view, one allocator source per registered plug-in
        self.allocators = tuple(
            f.new_allocator(len(self.device_source.devices)) for f in frameworks()
        )
        for name, (plugin, setting) in _PLUGIN_SETTINGS.items():
            setting.apply(self.allocator(plugin), getattr(cfg, name))  # type: ignore[arg-type]
        self.host = HostSource()
        # this kernel's children and the GPUs' processes (who each one is)
        self.process_source = ProcessSource(self.device_source, cfg.process_interval)
        # The timeline's sources, in column order; a new source is one more entry here.
        sources = [
            self.device_source,
            self.process_source,
            *(AllocatorColumns(a, self.device_source, self.cuda_mapping) for a in self.allocators),
            self.host,
        ]
        self.timeline = Timeline(timeline_columns(sources))
        intervals = {
            ALLOCATOR: cfg.allocator_interval, DETAIL: cfg.detail_interval,
            SLOW: cfg.slow_interval,
        }  # fmt: skip
        self.sampler = Sampler(sources, self.timeline, interval=cfg.interval, intervals=intervals)
        # (the source, not self: the sampler must not keep the session alive)
        counts = role(self.device_source, CallCountRole)  # (None: the cost counts no calls)
        self.sampler.cost.device_counter = counts.call_counts if counts is not None else None
        self.sampler.cost.device_label = self.device_source.label
        self.sampler.quiet = self._quiet_watch(cfg.idle_interval)
        self.ledger = Ledger(
            self.device_source, self.allocators, self.host, self.timeline,
            peak_mode=cfg.peak_mode, capacity=cfg.history, ask=self.device_ask,
        )  # fmt: skip
        self._ledger_in_step()
        cfg.observe(self._config_changed, names=_LIVE_SETTINGS)
        self.closed = False
        self.cluster_control = cluster = ClusterControl(cfg, self.sampler)
        info = functools.partial(session_info, self.device_source)
        self.recording_control = recording = RecordingControl(
            cfg, self.timeline, info, cluster.recorded_nodes
        )
        self.tracing_control = tracing = TracingControl(cfg, shell, recording)
        self.children = ChildrenControl(self.process_source, self.ledger, recording.update_cell)
        self.memory = MemoryControl(
            self.device_source, self.device_ask, self.allocators, self.host, self.ledger, shell,
            self.children.processes_now,
        )  # fmt: skip
        self.cells_pipeline = CellPipeline(
            cfg, shell, self.sampler, self.ledger, tracing, self.memory, recording, self.children
        )
        self.shell = shell  # (the monitor's advice asks the shell too)
        # what every view reads, the one LiveData (the monitor shows it); read by views only,
        # never on the sampler's tick or a cell's path
        self.data = LiveData(
            self.device_source, self.timeline, self.ledger, self.sampler, cluster,
            lambda: live_status(self), self.cells_pipeline.finish_pending,
        )  # fmt: skip
        # what the exporter the Monitor one layer up serves has served, for status (None: off);
        # never a socket here
        self.exporter_facts_of: Callable[[], ExporterFacts | None] = _no_exporter
        _open_sessions.add(self)

    def _quiet_watch(self, idle_interval: float) -> QuietWatch:
        """What tells the sampler nothing moves: the GPUs' memory and utilization, the RSS,
        this kernel's children (the cell pipeline tells it of cells)."""
        devices, processes = self.device_source, self.process_source
        indices = [d.index for d in devices.devices]
        used, util = metric(devices.name, "mem_used"), metric(devices.name, "gpu_util")
        return QuietWatch(
            self.timeline.columns,
            used=[used.column(i) for i in indices],
            util=[util.column(i) for i in indices],
            rss=metric(self.host.name, "rss").column(),
            busy=lambda: processes.has_children,  # (the source, not self: see the sampler's)
            idle_interval=idle_interval,
        )

    def _ledger_in_step(self) -> None:
        """The ledger's cadences from GPUMon's: how late the allocators' first read in a cell may
        come, how long the sampler's reading of the device stands for now."""
        cfg = self.config
        self.ledger.allocator_lag = cfg.allocator_interval + cfg.interval
        # (while the sampler waits its idle interval nothing moved: its reading stands)
        self.ledger.reading_fresh_for = max(1.0, 3 * cfg.interval, 2 * cfg.idle_interval)

    def _config_changed(self, change: dict) -> None:
        name, value = change["name"], change["new"]
        if name in ("interval", "allocator_interval", "idle_interval"):
            self._ledger_in_step()
        if name == "interval":
            self.sampler.set_interval(value)
        elif name in _INTERVALS:
            self.sampler.intervals[_INTERVALS[name]] = value
        elif name == "process_interval":
            self.process_source.interval = value
        elif name == "idle_interval" and self.sampler.quiet is not None:
            self.sampler.quiet.idle_interval = value
        elif name == "peak_mode":
            self.ledger.peak_mode = value
        elif name in _PLUGIN_SETTINGS:
            plugin, setting = _PLUGIN_SETTINGS[name]
            setting.apply(self.allocator(plugin), value)  # type: ignore[arg-type]
        elif name in CLUSTER_SETTINGS:
            try:
                did = self.cluster_control.setting_changed(name, change["old"])
            except UsageError as exc:
                raise TraitError(str(exc)) from None
            if did is not None:
                self.config.tell(SettingOutcome(name, did))
        elif name == "nvtx" and (did := self.tracing_control.nvtx_setting_changed(value)):
            self.config.tell(SettingOutcome(name, did))
        elif name == "record_path" and not self.recording_control.syncing:
            try:
                did = self.record(value or None)
            except RecordingError as exc:  # the setting keeps saying what is recorded
                self.recording_control.sync_path(change["old"])
                raise TraitError(str(exc)) from None
            self.config.tell(SettingOutcome(name, did))

    def start(self) -> None:
        """Start sampling (no-op when running)."""
        if not self.closed:
            self.sampler.start()

    def wait_for_samples(self, timeout: float = FIRST_SAMPLE_WAIT) -> bool:
        """Wait (at most ``timeout`` s) for the first sample, for what is shown or served at
        once; True once there is one. Not while the device is not answering."""
        return self.sampler.wait_for_first_tick(timeout, give_up=self.device_ask.silent_for)

    def stop(self) -> None:
        """Stop sampling; the timeline and ledger stay readable (a stuck thread: CLOSE_WAIT)."""
        self.sampler.stop(CLOSE_WAIT)

    def close(self) -> None:
        """Stop sampling for good and release the devices (close_devices: never waited for)."""
        if self.closed:
            return
        self.closed = True
        self.cells_pipeline.finish_pending()  # (the last cell's end, where it was put off)
        stopped = self.sampler.stop(CLOSE_WAIT)
        self.device_ask.close()
        self.recording_control.stop()  # after the sampler: its last rows are written too
        self.config.unobserve(self._config_changed, names=_LIVE_SETTINGS)
        self.cluster_control.stop()
        self.tracing_control.close()
        for allocator in self.allocators:
            close = getattr(allocator, "close", None)  # optional: a source with hooks to undo
            if close is not None:
                close()
        close_devices(self.device_source, self.device_ask, self.sampler, stopped)
        late = self._late_start
        if late is not None and late.took is not None:  # (one still starting is left to end)
            late.source.close()
        self.host.close()
        self.process_source.close()
        _open_sessions.discard(self)

    def devices_started_late(self) -> LateStart | None:
        return started_late(self._late_start)

    @property
    def has_gpu(self) -> bool:
        return bool(self.device_source.devices)

    @property
    def tracing(self) -> TracingState:  # on, armed (waiting for CUDA) or off (TracingControl)
        return self.tracing_control.state

    @property
    def nvtx_ranges(self) -> NvtxRanges:
        return self.tracing_control.nvtx_ranges

    @property
    def recording(self) -> RecorderState | None:  # what the recorder is doing (None: none)
        return self.recording_control.state

    def gpu_framework_active(self) -> bool:
        return self.memory.gpu_framework_active()

    def allocator(self, name: str) -> AllocatorSource | None:
        """The allocator source of the framework plug-in ``name`` ("torch"); None for none."""
        return next((a for a in self.allocators if a.name == name), None)

    def cells(self) -> list[CellRecord]:  # the ledger, oldest first (cells and regions)
        self.cells_pipeline.finish_pending()  # (the last cell's, where its end was put off)
        self.children.settle()  # (a child's newest figures in its cell's record)
        return self.ledger.records()

    def node_timeline(self) -> NodeTimeline:  # other nodes' samples (made on first use)
        return self.cluster_control.node_timeline()

    def record(self, path: str | os.PathLike[str] | None) -> RecordingChange:
        """Record to the SQLite file ``path`` from now on (None: stop); what that did."""
        return self.recording_control.record(path, self.cells(), self.ledger.marks)


# Sessions not yet closed. One exit handler for all of them, registered when this module is
# first imported: %reload_ext re-runs the package's __init__, never this module.
_open_sessions: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for session in list(_open_sessions):
        session.close()
