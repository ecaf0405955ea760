"""``Session``: the sources, the sampler, the timeline, the ledger, the forensics and the
recorder of one kernel, assembled. It knows nothing of IPython or of views: the shell comes in
as a callable that returns it (or None), and views are added one layer up (``Monitor``)."""

from __future__ import annotations

import atexit
import dataclasses
import math
import os
import weakref
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from traitlets import TraitError

from .._foundation.errors import RecordingError, UsageError
from .._foundation.metrics import metric
from .._ledger.ledger import MAX_LABEL, Ledger
from .._ledger.outcome import is_host_out_of_memory
from .._ledger.records import CellRecord
from .._sampling.device_ask import DeviceAsk
from .._sampling.node_timeline import NodeTimeline
from .._sampling.sampler import PREPARE_WAIT, Sampler, timeline_columns
from .._sampling.timeline import Timeline
from .._sources.allocator_columns import AllocatorColumns
from .._sources.base import ALLOCATOR, DETAIL, SLOW, AllocatorSource
from .._sources.devices.nvml import NvmlSource  # the default device source
from .._sources.devices.protocol import DeviceSource, GpuProcess
from .._sources.frameworks import frameworks, plugin_settings
from .._sources.host import HostSource
from .cluster_control import CLUSTER_WAIT, ClusterControl
from .cluster_control import SETTINGS as CLUSTER_SETTINGS
from .config import GPUMon
from .data import Cluster, Device, MigInstance, RunningCell, Status
from .info import session_info
from .nvtx_ranges import NvtxRanges, range_name
from .recording_control import RecordingControl
from .region import Region
from .status import live_status

if TYPE_CHECKING:
    from .._forensics.holder_scan import HolderScan
    from .._forensics.leaks import LeakWatch
    from .._forensics.oom_snapshot import SnapshotStore
    from .._forensics.release import MemoryNow
    from .._forensics.tracing import AllocationTracer
    from .._foundation.windows import Chunk, Window

# What only some sessions use (the recorder, the cluster source, holder scans, the OOM
# post-mortem, tracing) is imported on first use: ``%load_ext`` waits for every import here.

TRACE_MIN_BYTES = 2**20  # traced lines smaller than this are not shown
TRACE_LINES = 5  # traced lines printed under a cell (the record keeps them all)
_LIVE_SETTINGS = [
    "interval", "allocator_interval", "detail_interval", "slow_interval", "peak_mode",
    "record_path", "prometheus_url", "prometheus_match", "cluster_interval",
    "cluster_timeout", "cluster_host_label", "nvtx",
    *(setting.name for _, setting in plugin_settings()),  # the plug-ins' own (cupy_peak_hook)
]  # fmt: skip
# a plug-in's own setting -> (its plug-in's name, the setting): passed on to its source
_PLUGIN_SETTINGS = {setting.name: (plugin.name, setting) for plugin, setting in plugin_settings()}
FIRST_SAMPLE_WAIT = 2.0  # seconds a snapshot or a new exporter waits for the first sample
# Seconds %load_ext waits for the device source to start and list its GPUs (a healthy driver:
# ~10 ms); past it the session goes on without GPUs and the start carries on in the background.
OPEN_WAIT = 1.0
# Seconds close() (%unload_ext) waits for the sampler's thread; one stuck in the driver ends
# when its call returns, writing nothing.
CLOSE_WAIT = 0.5


RSS = metric("host", "rss")


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
        self.config = config if config is not None else GPUMon()
        self._shell = shell  # the running shell (namespace, Out, tracebacks), or None
        # ``new_device_source`` makes the device source; ``nvml_module`` (the fault tests' fake
        # library) goes to the default one. The main thread asks it with a deadline;
        # _late_source: one still starting.
        new_source = new_device_source or (lambda: NvmlSource(nvml_module))
        self.device_source, self.device_ask, self._late_source = open_devices(new_source)
        self._mem_used = metric(self.device_source.name, "mem_used")
        # each framework's own view, one allocator source per registered plug-in
        self.allocators = tuple(
            f.new_allocator(len(self.device_source.devices)) for f in frameworks()
        )
        for name, (plugin, setting) in _PLUGIN_SETTINGS.items():
            setting.apply(self.allocator(plugin), getattr(self.config, name))  # type: ignore[arg-type]
        self.host = HostSource()
        # The timeline's sources, in column order; a new source is one more entry here.
        sources = [
            self.device_source,
            *(AllocatorColumns(allocator, self.device_source) for allocator in self.allocators),
            self.host,
        ]
        self.timeline = Timeline(timeline_columns(sources))
        cfg = self.config
        self.sampler = Sampler(
            sources,
            self.timeline,
            interval=cfg.interval,
            intervals={
                ALLOCATOR: cfg.allocator_interval,
                DETAIL: cfg.detail_interval,
                SLOW: cfg.slow_interval,
            },
        )
        # (the source, not self: the sampler must not keep the session alive)
        self.sampler.cost.device_counter = self.device_source.call_counts
        self.sampler.cost.device_label = self.device_source.label
        self.ledger = Ledger(
            self.device_source,
            self.allocators,
            self.host,
            self.timeline,
            peak_mode=cfg.peak_mode,
            capacity=cfg.history,
            ask=self.device_ask,
        )
        self.ledger.allocator_lag = cfg.allocator_interval + cfg.interval
        cfg.observe(
            self._config_changed,
            names=_LIVE_SETTINGS,
        )
        self.closed = False
        self._leak_watch: LeakWatch | None = None
        self._tracer: AllocationTracer | None = None
        self._snapshots: SnapshotStore | None = None  # OOM snapshot files, made on first use
        self.nvtx_ranges = NvtxRanges(enabled=cfg.nvtx)
        self._cell_range: int | None = None  # the NVTX range of the running cell
        self._syncing_nvtx = False  # set while nvtx() writes GPUMon.nvtx
        self._nvtx_error_shown = ""
        self._cluster = ClusterControl(cfg, self.sampler)
        self._recording = RecordingControl(
            cfg,
            self.timeline,
            lambda: session_info(self.device_source),
            self._cluster.recorded_nodes,
        )
        _open_sessions.add(self)

    def devices_started_late(self) -> str:
        """For status, where the device source was still starting after OPEN_WAIT: how that
        went ("" if it started in time)."""
        late = self._late_source
        if late is None:
            return ""
        if late.reading_since:
            waited = late.not_answering_for()
            return f"{late.label} has not answered for {waited:.1f} s (still starting)"
        if not late.available:
            return f"{late.label} answered after {late.last_took:.1f} s: {late.status}"
        return (
            f"{late.label} answered after {late.last_took:.1f} s, with {len(late.devices)} "
            "GPU(s): %reload_ext nbgpumon watches them"
        )

    def _config_changed(self, change: dict) -> None:
        name, value = change["name"], change["new"]
        if name in ("interval", "allocator_interval"):
            self.ledger.allocator_lag = self.config.allocator_interval + self.config.interval
        if name == "interval":
            self.sampler.set_interval(value)
        elif name == "allocator_interval":
            self.sampler.intervals[ALLOCATOR] = value
        elif name == "detail_interval":
            self.sampler.intervals[DETAIL] = value
        elif name == "slow_interval":
            self.sampler.intervals[SLOW] = value
        elif name == "peak_mode":
            self.ledger.peak_mode = value
        elif name in _PLUGIN_SETTINGS:
            plugin, setting = _PLUGIN_SETTINGS[name]
            setting.apply(self.allocator(plugin), value)  # type: ignore[arg-type]
        elif name in CLUSTER_SETTINGS:
            try:
                line = self._cluster.setting_changed(name, change["old"])
            except UsageError as exc:
                raise TraitError(str(exc)) from None
            if line:
                print(f"nbgpumon: {line}")
        elif name == "nvtx" and not self._syncing_nvtx:
            ranges = self.nvtx_ranges
            line = ranges.start() if value else ranges.stop()
            if value and not ranges.enabled:
                self._sync_nvtx(False)  # the setting keeps saying what is done
            print(f"nbgpumon: {line}")
        elif name == "record_path" and not self._recording.syncing:
            try:
                line = self.record(value or None)
            except RecordingError as exc:
                self._recording.sync_path(
                    change["old"]
                )  # the setting keeps saying what is recorded
                raise TraitError(str(exc)) from None
            print(f"nbgpumon: {line}")

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Start sampling (no-op when running)."""
        if not self.closed:
            self.sampler.start()

    def wait_for_samples(self, timeout: float = FIRST_SAMPLE_WAIT) -> bool:
        """Wait (at most ``timeout`` s) for the sampler's first sample, which comes a little
        after loading; for what is shown or served at once. True once there is one. Not
        waited for once NVML is not answering: the first sample is then a driver's call away."""
        return self.sampler.wait_for_first_tick(timeout, give_up=self.device_ask.silent_for)

    def stop(self) -> None:
        """Stop sampling; the timeline and ledger stay readable. A thread still in a driver's
        call is not waited for past CLOSE_WAIT: it ends when the call returns."""
        self.sampler.stop(CLOSE_WAIT)

    def close(self) -> None:
        """Stop sampling for good, close the widget and release NVML (at once, or, where a
        thread is still in a call to it, once that call returns: never waited for)."""
        if self.closed:
            return
        self.closed = True
        stopped = self.sampler.stop(CLOSE_WAIT)
        self.device_ask.close()
        self._recording.stop()  # after the sampler: its last rows are written too
        self.config.unobserve(self._config_changed, names=_LIVE_SETTINGS)
        self._cluster.stop()
        self.nvtx_ranges.close()
        for allocator in self.allocators:
            close = getattr(allocator, "close", None)  # optional: a source with hooks to undo
            if close is not None:
                close()
        devices = self.device_source
        if stopped and not devices.asking_since:
            devices.close()
        else:  # a thread is still in the driver: shutting it down under that call is no fix;
            # once the sampler's thread has ended, and then once the ask's worker is out of it
            self.sampler.when_ended(lambda: self.device_ask.when_idle(devices.close))
        if self._late_source is not None and not self._late_source.reading_since:
            self._late_source.close()
        self.host.close()
        _open_sessions.discard(self)

    # -- what views hear of (the Monitor one layer up shows them) -------------------------
    def ledger_changed(self) -> None:
        """A cell was recorded or a mark set (main thread)."""

    def cell_opened(self) -> None:
        """A cell's measurement has begun (main thread)."""

    # where the Monitor one layer up serves the Prometheus exporter, for the status ("" when
    # it serves nothing): the session itself never listens on a socket
    exporter_line = ""

    # -- SessionData: what views read ------------------------------------------------------
    source = "live session"

    @property
    def devices(self) -> tuple[Device, ...]:
        return tuple(
            Device(
                d.index,
                d.name,
                d.memory_total,
                d.cuda_index,
                d.uuid,
                mig=None if d.mig is None else MigInstance(**dataclasses.asdict(d.mig)),
                unavailable=self.device_source.unavailable(d.index),
            )
            for d in self.device_source.devices
        )

    @property
    def columns(self) -> tuple[str, ...]:
        return self.timeline.columns

    @property
    def records(self) -> list[CellRecord]:
        return self.ledger.records()

    def records_after(self, index: int) -> tuple[int, list[CellRecord]]:
        return self.ledger.records_after(index)

    @property
    def marks(self) -> list[tuple[float, str]]:
        return list(self.ledger.marks)

    @property
    def cursor(self) -> int:
        return self.timeline.cursor

    def window(
        self, t0: float = -math.inf, t1: float = math.inf, columns: Sequence[str] | None = None
    ) -> Window:
        return self.timeline.window(t0, t1, columns)

    def since(self, cursor: int, limit: int | None = None) -> Chunk:
        return self.timeline.since(cursor, limit)

    def latest(self) -> dict[str, float] | None:
        return self.timeline.latest()

    def running(self) -> RunningCell | None:
        """The cell being measured now, with its start readings by timeline column: each
        allocator's allocated bytes (0 when it was not up yet), NVML's used bytes, RSS."""
        opened = self.ledger.open_cell()
        if opened is None:
            return None
        baseline: dict[str, int] = {}
        for d in self.device_source.devices:
            at = d.index
            used = opened.device_used[at] if at < len(opened.device_used) else None
            if used is not None:
                baseline[self._mem_used.column(at)] = used
            if d.cuda_index is None:
                continue
            for source in self.allocators:
                stats = opened.allocators.get(source.name, {}).get(d.cuda_index)
                # no stats at the start: the allocator held nothing (as the ledger counts it)
                allocated = metric(source.name, "allocated").column(at)
                baseline[allocated] = stats.allocated if stats else 0
        if opened.rss is not None:
            baseline[RSS.column()] = opened.rss
        count = opened.execution_count
        name = f"[{'?' if count is None else count}]"
        return RunningCell(name, count, opened.kind, opened.label, opened.start, baseline)

    def status(self) -> Status:
        return live_status(self)

    @property
    def cluster(self) -> Cluster | None:
        return self._cluster.cluster()

    def read_cluster(
        self,
        url: str | None,
        match: str | None = None,
        host_label: str | None = None,
        wait: float = CLUSTER_WAIT,
    ) -> str:
        """Read other nodes' GPUs from the Prometheus server at ``url`` from now on (None:
        stop); ``match``: label matchers that narrow it (None: GPUMon.prometheus_match);
        ``host_label``: the label naming a GPU's node (None: GPUMon.cluster_host_label).
        Waits up to ``wait`` seconds for the first answer; one line back."""
        return self._cluster.read(url, match, host_label, wait)

    def node_timeline(self) -> NodeTimeline:
        """The store of other nodes' samples, made on first use; the sampler fills it."""
        return self._cluster.node_timeline()

    def subscribe(self, callback: Callable[[int], None]) -> Callable[[], None]:
        return self.sampler.subscribe(callback)

    # -- the public API -------------------------------------------------------------------
    @property
    def has_gpu(self) -> bool:
        return bool(self.device_source.devices)

    def cells(self) -> list[CellRecord]:
        """The ledger, oldest first (cells and regions)."""
        return self.ledger.records()

    def holders(self, device: str | None = None, budget: float = 0.05) -> HolderScan:
        """What holds memory now, biggest first: variables, ``Out[N]``, ``_``, tracebacks.

        ``device``: "cuda", "cuda:N" or "host"; by default "cuda" once a framework (torch,
        JAX, CuPy) has the GPU up in this kernel, else "host". Stops after ``budget`` seconds
        with a partial answer. "cuda" on a machine with no GPU is a UsageError that says so.
        """
        from .._forensics import holder_scan

        if device is None:
            device = "cuda" if self.gpu_framework_active() else "host"
        if not isinstance(device, str) or not holder_scan.DEVICES.match(device):
            raise UsageError(f"device is cuda, cuda:N or host, not {device!r}")
        if device.startswith("cuda") and not self.has_gpu and not self.gpu_framework_active():
            # (a walk would look at every object and find 0 B: that says nothing)
            raise UsageError(
                f"no GPU here ({self.device_source.status}), so nothing holds CUDA memory; "
                "%gpumon holders host lists what holds host memory"
            )
        found = holder_scan.scan(self._shell(), device, budget)
        return dataclasses.replace(found, processes=tuple(self.processes_on(device)))

    def free(self) -> str:
        """Drop what IPython's hidden references hold (outputs, ``_``, stored tracebacks),
        collect garbage and give torch's cache and CuPy's unused pool blocks back; never a
        variable of yours. Says what came back.
        """
        from .._forensics.release import freed_line, release

        before = self._memory_now()
        cleared, frames = release(self._shell(), self.allocators)
        after = self._memory_now()
        return freed_line(before, after, cleared, frames)

    def after_cell(self, record: CellRecord, error: BaseException | None) -> tuple[CellRecord, str]:
        """Name the holders of what ``record`` kept (when over the threshold), attribute what
        it left behind to lines (tracing on), and for an out-of-memory error write the
        post-mortem. Returns the record as the ledger now holds it, and text to print under
        the cell ("" for none)."""
        self.nvtx_ranges.pop_to(self._cell_range)  # first: the range covers the cell's work
        self._cell_range = None
        shell = self._shell()
        if shell is None:
            return record, ""
        out: list[str] = []
        if self.nvtx_ranges.error and self.nvtx_ranges.error != self._nvtx_error_shown:
            self._nvtx_error_shown = self.nvtx_ranges.error
            out.append(f"nbgpumon: {self.nvtx_ranges.error}")
        retention = self._leaks(shell).verdict(record, self.config.leak_threshold)
        traced: tuple[str, ...] = ()
        trace_lines: list[str] = []
        post_mortem = ""
        # whether torch's recorder was on while the cell ran (a cell that initialised CUDA
        # turns it on at its end)
        traced_during_cell = self._tracer is not None and self._tracer.active
        if self._tracer is not None and self._tracer.armed:
            from .._forensics.tracing import format_traced

            found = self._tracer.cell_finished(record.execution_count)
            traced = tuple(format_traced(a) for a in found if a.bytes >= TRACE_MIN_BYTES)
            trace_lines = [f"nbgpumon trace: {line}" for line in traced[:TRACE_LINES]]
            if len(traced) > TRACE_LINES:
                trace_lines.append(f"nbgpumon trace: … {len(traced) - TRACE_LINES} more lines")
        if retention is not None or traced:
            record = self.ledger.annotate(record, retention=retention, traced=traced)
        # host MemoryError is "oom" in the ledger too, but this post-mortem is about the GPU
        gpu_oom = error is not None and not is_host_out_of_memory(error)
        if record.status == "oom" and gpu_oom and self.config.oom_report:
            from .._forensics.postmortem import gather as gather_oom_facts
            from .._forensics.postmortem import report as post_mortem_report

            facts = gather_oom_facts(self, shell, record, error)
            if self._flight_records(facts.framework):
                flight = self._oom_flight_record(shell, record, traced_during_cell)
                facts = dataclasses.replace(facts, **flight)
            if facts.largest:
                trace_lines = []  # the post-mortem lists the same lines, among all live blocks
            post_mortem = post_mortem_report(facts)
        out += trace_lines
        if post_mortem:
            out.append(post_mortem)
        self._recording.add_cell(record)
        out += self._recording.notices()
        return record, "\n".join(out)

    def _oom_flight_record(self, shell: Any, record: CellRecord, traced: bool) -> dict[str, Any]:
        """The post-mortem's live blocks by line and saved snapshot (OomFacts fields)."""
        from .._forensics import oom_snapshot

        tracer = self._tracer
        if tracer is None or not tracer.armed:
            return {"snapshot_line": oom_snapshot.NOT_TRACING}
        if not traced or not tracer.active:
            return {"snapshot_line": oom_snapshot.TRACING_NOT_YET}
        if self._snapshots is None:
            self._snapshots = oom_snapshot.SnapshotStore()
        filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
        recorder = self._recording.writer
        found = oom_snapshot.flight_record(
            tracer.full_snapshot,
            self._snapshots,
            filename_map,
            record.execution_count,
            str(recorder.path) if recorder is not None else None,
            tracer.viewer,
        )
        return {"largest": found.largest, "snapshot_line": found.line}

    @staticmethod
    def _flight_records(name: str) -> bool:
        """Whether an out-of-memory error of framework ``name`` gets the flight recorder: its
        plug-in records allocation history."""
        from .._sources.frameworks import framework

        plugin = framework(name)
        return plugin is not None and plugin.memory_history is not None

    def cell_started(self, execution_count: int | None = None, source: str = "") -> None:
        """Note the namespace before a cell (ids only), for the leak verdict after it, and
        what is alive on the GPU when tracing is on; open the cell's NVTX range when on
        (``source``: the cell's text, whose first line names it)."""
        self.sampler.wait_until_prepared(PREPARE_WAIT)  # (only a cell run at once after loading)
        shell = self._shell()
        if shell is not None:
            self._leaks(shell).cell_started()
            if self._tracer is not None and self._tracer.armed:
                self._tracer.cell_started(execution_count)
        ranges = self.nvtx_ranges
        ranges.pop_to(self._cell_range)  # a cell whose end never came: its range ends here
        self._cell_range = None
        if ranges.enabled:  # last: the range covers the cell, not nbgpumon's work before it
            self._cell_range = ranges.push(range_name(execution_count, source))

    def trace(self, on: bool) -> str:
        """Turn allocation tracing on or off; one line saying what happened."""
        if self._tracer is None:
            if not on:
                return "allocation tracing was not on"
            from .._forensics.tracing import AllocationTracer

            self._tracer = AllocationTracer(self._shell())
        return self._tracer.start() if on else self._tracer.stop()

    def nvtx(self, on: bool | None) -> str:
        """Turn NVTX cell ranges on or off (None: say whether they are); one line back."""
        ranges = self.nvtx_ranges
        if on is None:
            return f"NVTX ranges are {ranges.state}"
        line = ranges.start() if on else ranges.stop()
        self._sync_nvtx(ranges.enabled)
        return line

    def _sync_nvtx(self, on: bool) -> None:
        self._syncing_nvtx = True
        try:
            self.config.nvtx = on
        finally:
            self._syncing_nvtx = False

    @property
    def tracing(self) -> str:
        """ "on", "armed" (waiting for CUDA), or "off", plus the last problem if any."""
        t = self._tracer
        state = "off" if t is None or not t.armed else ("on" if t.active else "armed")
        return f"{state} ({t.error})" if t is not None and t.error else state

    def record(self, path: str | os.PathLike[str] | None) -> str:
        """Record to the SQLite file ``path`` from now on (None: stop); one line back.

        ``path`` is a new file (missing folders are made, and the line says so) or an earlier
        recording, which gets a new session. Anything else raises :class:`RecordingError`,
        and then the recording that was running goes on untouched.
        """
        return self._recording.record(path, self.cells(), self.ledger.marks)

    @property
    def recording(self) -> str:
        """What the recorder is doing, as one line ("" when there is none)."""
        return self._recording.status

    def tell_recording(self) -> str:
        """:attr:`recording`, for a line printed now (main thread): a notice of the same
        words is then not said again at the cell's end."""
        return self._recording.tell()

    def mark(self, label: str) -> None:
        """Put a labelled marker on the timeline at this instant."""
        if not isinstance(label, str) or not label.strip():
            raise UsageError('mark() takes a non-empty label: nbgpumon.mark("warm-up done")')
        check_label_length("mark", label)
        self.ledger.mark(label.strip())
        self._recording.add_mark(*self.ledger.marks[-1])
        self.ledger_changed()

    def track(self, label: str) -> Region:
        """A region inside a cell, recorded like a cell: ``with mon.track("epoch 3"): ...``."""
        if not isinstance(label, str) or not label.strip():
            raise UsageError('track() takes a non-empty label: with nbgpumon.track("epoch 3"): ...')
        check_label_length("track", label)
        return Region(
            self.ledger, label.strip(), on_end=self._region_ended, ranges=self.nvtx_ranges
        )

    def _region_ended(self, record: CellRecord) -> None:
        self._recording.add_cell(record)

    def allocator(self, name: str) -> AllocatorSource | None:
        """The allocator source of the framework plug-in ``name`` ("torch"); None for none."""
        return next((a for a in self.allocators if a.name == name), None)

    def gpu_framework_active(self) -> bool:
        """True once a framework plug-in's allocator has the GPU up in this kernel."""
        return any(source.active() for source in self.allocators)

    # -- helpers for the holder views --------------------------------------------------------
    def _leaks(self, shell: Any) -> LeakWatch:
        if self._leak_watch is None or self._leak_watch.shell is not shell:
            from .._forensics.leaks import LeakWatch  # (and the holder scan): first cell's end

            self._leak_watch = LeakWatch(shell)
        return self._leak_watch

    def processes_on(self, device: str) -> list[GpuProcess]:
        """Processes the device source lists on ``device`` ("cuda", "cuda:N"; none for "host")."""
        if device == "host":
            return []
        procs = list(self.device_source.processes)
        if ":" in device:
            cuda = int(device.split(":")[1])
            on = [d.index for d in self.device_source.devices if d.cuda_index == cuda]
            procs = [p for p in procs if p.index in on]
        return procs

    def _memory_now(self) -> MemoryNow:
        from .._forensics.release import MemoryNow

        stats = self.ledger.read_allocator()
        return MemoryNow(
            allocated=sum(s.allocated for s in stats.values()) if stats else None,
            reserved=sum(s.reserved for s in stats.values()) if stats else None,
            rss=self.host.rss(),
        )


def open_devices(
    new_source: Callable[[], DeviceSource],
) -> tuple[DeviceSource, DeviceAsk, DeviceSource | None]:
    """A device source started on a worker, waited for at most OPEN_WAIT, and its asker. A
    driver that does not answer by then gives a source never opened (no GPU: the timeline's
    columns are fixed at load), and the one still starting, whose answer status reports."""
    source = new_source()
    ask = DeviceAsk(source)
    if ask.run(source.open, OPEN_WAIT) is not None:
        return source, ask, None
    ask.close()  # its worker ends when the start returns
    idle = new_source()  # never opened: no device, no call to its library
    idle.not_started(
        f"{idle.label} is not answering: not started {OPEN_WAIT:g} s after loading; "
        "%gpumon status says when it answers"
    )
    return idle, DeviceAsk(idle), source


def check_label_length(what: str, label: str) -> None:
    """Refuse a ``what`` ("mark", "track") label longer than MAX_LABEL characters."""
    if len(label) > MAX_LABEL:
        raise UsageError(
            f"a {what} label is at most {MAX_LABEL:,} characters, not {len(label):,}; shorten it"
        )


# Sessions not yet closed. One exit handler for all of them, registered when this module is
# first imported: %reload_ext re-runs the package's __init__, never this module.
_open_sessions: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for session in list(_open_sessions):
        session.close()
