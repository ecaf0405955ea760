"""``Monitor`` is this process's session with its views (the live chart, the static picture, the
frames and the advice). What ``nbgpumon.monitor()`` returns: it holds the session privately and
shows the public API only (docs/python-api.md), plus what the magics and ``_ipython`` use; views
read the session's ``LiveData`` (``Monitor.data``), a ``SessionData``."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traitlets import TraitError

from .._foundation.errors import UsageError
from .._foundation.forwarding import forwards_to
from .._ledger.records import CellRecord
from .._sampling.timeline import Timeline
from .._session.analysis.fit_arguments import FitArguments
from .._session.analysis.whatif_arguments import WhatifArguments
from .._session.cell_pipeline import CellPipeline
from .._session.controls.cluster import ClusterControl
from .._session.facts.status import ExporterFacts
from .._session.live_data import LiveData
from .._session.region import Region
from .._session.session import FIRST_SAMPLE_WAIT, Session
from .exporter import Exporter, process_rank

if TYPE_CHECKING:
    import pandas

    from .._forensics.holder_scan import HolderScan
    from .._session.facts.settings import SettingOutcome, SettingRefused
    from .._views.reprs.fit_result import FitResult
    from .._views.reprs.whatif_result import WhatifResult
    from .._views.widget.live_chart import GPUMonWidget, Publisher
    from .._views.widget.static_view import StaticView
    from .explain import CellExplanation, Explanation
    from .recorded import Recorded

# The views (anywidget and ipywidgets, numpy, pandas) are imported when first used, not by
# ``%load_ext``: together they cost more than the rest of loading (docs/benchmarks.md).


class Monitor:
    """Everything nbgpumon measures in this process, and the views of it. Usable without
    IPython. ``_session`` is the one door to the internals (tests)."""

    @forwards_to(Session)  # the session's options (config, shell, ...), declared there once
    def __init__(self, *args: Any, **options: Any) -> None:
        self._session = session = Session(*args, **options)
        late = session.devices_started_late()
        if late is not None:  # its start did not answer in time: the source says so, in words
            from .._views.status.session_status import not_started_line

            session.device_source.not_started(not_started_line(late.label))
        self.config = session.config
        session.exporter_facts_of = self._exporter_facts
        session.cells_pipeline.on_changed = self._ledger_changed
        session.cells_pipeline.on_opened = self._cell_opened
        session.cells_pipeline.told_before_reply = self._told_before_reply
        self._publisher: Publisher | None = None
        self._static_views: list[StaticView] = []
        self._exporter: Exporter | None = None
        self._collector: Any = None  # the exporter's SessionCollector, kept across restarts
        self._syncing_export = False  # set while export() writes GPUMon.export_port/host
        self.config.observe(self._export_setting_changed, names=_EXPORT_SETTINGS)
        self.config.tell = _say_setting  # what a %config did or refused, in the user's cell

    # -- the session's public face --------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._session.closed

    @property
    def data(self) -> LiveData:
        """What every view reads of this session (a ``SessionData``, as ``nbgpumon.load``'s
        recordings are): devices, samples, cells, marks, status."""
        return self._session.data

    @property
    def timeline(self) -> Timeline:
        """The timeline of samples, read with ``latest()``, ``since(cursor)`` and
        ``window(t0, t1)``."""
        return self._session.timeline

    @property
    def cell_pipeline(self) -> CellPipeline:
        """The order of a cell's life, for IPython's cell events (``_ipython/cell_hooks.py``)."""
        return self._session.cells_pipeline

    @property
    def has_gpu(self) -> bool:
        return self._session.has_gpu

    @property
    def device_status(self) -> str:
        """The device source's status ("ok", or why there is no GPU)."""
        return self._session.device_source.status

    @property
    def device_mapping_note(self) -> str:
        """How the CUDA numbering was worked out, where that needs saying ("" else)."""
        mapping = self._session.cuda_mapping  # (None: the source numbers devices as CUDA does)
        return mapping.mapping_note if mapping is not None else ""

    def start(self) -> None:
        """Start sampling (no-op when running)."""
        self._session.start()

    def stop(self) -> None:
        """Stop sampling; the timeline and ledger stay readable."""
        self._session.stop()

    def wait_for_samples(self, timeout: float = FIRST_SAMPLE_WAIT) -> bool:
        """Wait (at most ``timeout`` s) for the sampler's first sample; True once there is one."""
        return self._session.wait_for_samples(timeout)

    def cells(self) -> list[CellRecord]:
        """The ledger, oldest first (cells and regions)."""
        from .short_lists import CellList  # (views: imported when first used)

        return CellList(self._session.cells())

    def __repr__(self) -> str:
        from .._views.reprs.monitor import monitor_text

        return monitor_text(self.data.status(), self.cells())

    def _repr_html_(self) -> str:
        from .._views.reprs.monitor import monitor_html

        return monitor_html(self.data.status(), self.cells())

    def holders(self, device: str | None = None, budget: float = 0.05) -> HolderScan:
        """What holds memory now, biggest first: variables, ``Out[N]``, ``_``, tracebacks.

        ``device``: "cuda", "cuda:N" or "host"; by default "cuda" once a framework (torch,
        JAX, CuPy) has the GPU up in this kernel, else "host". Stops after ``budget`` seconds
        with a partial answer. "cuda" on a machine with no GPU is a UsageError that says so.
        """
        from .holders import HolderReport  # the scan, which prints as its words

        return HolderReport.of(self._session.memory.holders(device, budget))

    def explain(
        self, cell: int | None = None, budget: float = 0.05
    ) -> Explanation | CellExplanation:
        """This kernel's memory on each GPU it can use, by what it is, adding up to the driver's
        figure for this process. The kinds are parameters, gradients, optimizer state, buffers,
        other arrays, outputs and tracebacks, what the frameworks count in use that nothing reached
        holds, their unused reserves and the CUDA context. "No GPU" is a UsageError.

        ``cell``: cell N of the ledger instead (its newest run): its memory by kind at its
        end, what it kept by kind, and its peak split into what stayed and the activations
        and temporaries it freed before its end."""
        from .explain import Explanation, explain_recorded_cell

        if cell is not None:
            return explain_recorded_cell(self._session.ledger.newest_first(), cell)
        return Explanation(self._session.memory.explain(budget))

    def free(self) -> str:
        """Drop what IPython's hidden references hold (outputs, ``_``, stored tracebacks),
        collect garbage and give torch's cache and CuPy's unused pool blocks back; never a
        variable of yours. Says what came back.
        """
        from .._views.memory.freed import freed_line

        return freed_line(self._session.memory.free())

    def record(self, path: str | os.PathLike[str] | None) -> str:
        """Record to the SQLite file ``path`` from now on (None: stop); one line back.

        ``path`` is a new file (missing folders are made, and the line says so) or an earlier
        recording, which gets a new session. Anything else raises :class:`RecordingError`,
        and then the recording that was running goes on untouched.
        """
        from .._views.status.recorder import recording_change_line

        return recording_change_line(self._session.record(path))

    @property
    def recording(self) -> str:
        """What the recorder is doing, as one line ("" when there is none)."""
        from .._views.status.recorder import recorder_line

        state = self._session.recording
        return recorder_line(state) if state is not None else ""

    def tell_recording(self) -> str:
        """:attr:`recording`, for a line printed now (main thread): a notice of the same
        words is then not said again at the cell's end."""
        from .._views.status.recorder import recorder_line

        state = self._session.recording_control.tell()
        return recorder_line(state) if state is not None else ""

    def mark(self, label: str) -> None:
        """Put a labelled marker on the timeline at this instant."""
        self._session.cells_pipeline.mark(label)

    def track(self, label: str) -> Region:
        """A region inside a cell, recorded like a cell: ``with mon.track("epoch 3"): ...``."""
        return self._session.cells_pipeline.track(label)

    def trace(self, on: bool) -> str:
        """Turn allocation tracing on or off; one line saying what happened."""
        from .._views.words.traced import tracing_line

        return tracing_line(self._session.tracing_control.trace(on))

    @property
    def tracing(self) -> str:
        """ "on", "armed" (waiting for CUDA), or "off", plus the last problem if any."""
        from .._views.words.traced import tracing_state_words

        return tracing_state_words(self._session.tracing)

    def nvtx(self, on: bool | None) -> str:
        """Turn NVTX cell ranges on or off (None: say whether they are); one line back."""
        from .._views.status.nvtx import nvtx_line

        return nvtx_line(self._session.tracing_control.nvtx(on))

    @forwards_to(ClusterControl.read)  # (url, match, host_label, wait), declared there once
    def read_cluster(self, *args: Any, **kwargs: Any) -> str:
        """Read other nodes' GPUs from the Prometheus server at ``url`` from now on (None: stop).
        ``match``: label matchers that narrow it (None: GPUMon.prometheus_match); ``host_label``:
        the label naming a GPU's node (None: GPUMon.cluster_host_label). Waits up to ``wait``
        seconds for the first answer; one line back."""
        from .._views.status.cluster import cluster_read_line

        return cluster_read_line(self._session.cluster_control.read(*args, **kwargs))

    def close(self) -> None:
        """Stop sampling for good, stop the exporter, close the widget, release the devices."""
        if self.closed:
            return
        self.config.unobserve(self._export_setting_changed, names=_EXPORT_SETTINGS)
        if self._exporter is not None:
            self._exporter.stop()
            self._exporter = None
        if self._publisher is not None:
            self._publisher.close()
            self._publisher = None
        for view in self._static_views:
            view.close()
        self._static_views.clear()
        self._session.close()

    # -- the Prometheus exporter ----------------------------------------------------------
    def export(self, port: int | None, host: str | None = None, *, retry: str = "") -> str:
        """Serve this session's metrics for Prometheus at ``http://HOST:PORT/metrics`` (HOST:
        ``host``, else ``GPUMon.export_host``, 127.0.0.1 by default); ``None`` or 0 stops.
        Returns one line. A port in use, a bad host or port raise :class:`UsageError` and
        leave the exporter as it was; ``GPUMon.export_port``/``export_host`` always say what is
        served. ``retry``: what the line of a port in use says to do (how the caller picks
        another port)."""
        if self.closed:
            raise UsageError("this monitor is closed; nbgpumon.monitor() gives the current one")
        old = self._exporter
        if not port:
            self._exporter = None
            if old is not None:
                old.stop()
            self._sync_export()
            return "exporter stopped" if old is not None else "not exporting"
        host = self.config.export_host if host is None else host
        if old is not None and (old.host, old.port) == (host, port):
            return f"exporting on {self.exporter_line}"
        if old is not None and old.port == port:
            old.stop()  # the same port on another address: let it go first
        try:
            self._exporter = Exporter(self._exporter_collector(), host, port, retry or _RETRY)
        except UsageError:
            if old is not None and not old.running:  # put back what was served
                self._exporter = _restart(old)
            self._sync_export()
            raise
        if old is not None:
            old.stop()
        self._sync_export()
        self.wait_for_samples()  # a scrape at once gets the GPUs' figures, not an empty page
        return f"exporting on {self._exporter.url}"

    @property
    def exporter_line(self) -> str:
        """Where the exporter serves and how many scrapes it answered; "" when it is off."""
        from .._views.status.session_status import exporter_line

        facts = self._exporter_facts()
        return exporter_line(facts) if facts is not None else ""

    def _exporter_facts(self) -> ExporterFacts | None:
        return self._exporter.facts() if self._exporter is not None else None

    def _exporter_collector(self) -> Any:
        if self._collector is None:
            from .exporter_families import SessionCollector  # prometheus_client: on use

            self._collector = SessionCollector(self.data, rank=process_rank())
        return self._collector

    def _export_setting_changed(self, change: dict) -> None:
        if self._syncing_export:
            return
        name, old = change["name"], change["old"]
        try:
            if name == "export_port":
                line = self.export(change["new"] or None)
            elif self._exporter is not None:  # export_host: serve on the new address
                line = self.export(self._exporter.port, host=change["new"])
            else:
                return  # used by the next start
        except UsageError as exc:
            self._sync_export(**{name: old})  # the setting keeps saying what is served
            raise TraitError(str(exc)) from None
        print(f"nbgpumon: {line}")

    def _sync_export(self, **given: Any) -> None:
        # GPUMon.export_port/export_host say what is served, however it was started; the flag
        # keeps the observer from acting on its own writes.
        exporter = self._exporter
        values = (
            {"export_port": exporter.port, "export_host": exporter.host}
            if exporter is not None
            else {"export_port": 0}
        )
        values.update(given)
        self._syncing_export = True
        try:
            for name, value in values.items():
                setattr(self.config, name, value)
        finally:
            self._syncing_export = False

    # -- views ----------------------------------------------------------------------------
    def widget(self) -> GPUMonWidget:
        """The live chart; one per monitor, so showing it twice gives two views of one model."""
        from .._views.widget.front_end import front_end_drops_thread_messages
        from .._views.widget.live_chart import GPUMonWidget, Publisher

        if self._publisher is None:
            widget = GPUMonWidget(self.data)
            main = front_end_drops_thread_messages()
            self._publisher = Publisher(self.data, widget, main_thread_sends=main)
        else:
            self._publisher.refresh_history()  # a new view starts from a recent snapshot
        return self._publisher.widget

    def static_view(self, display: Callable[..., Any]) -> StaticView:
        """An SVG picture shown with ``display`` (IPython's) that updates in place about once
        a second (Colab)."""
        from .._views.widget.static_view import StaticView

        view = StaticView(self.data, display)
        self._static_views.append(view)
        return view

    def recorded_now(self) -> Recorded | None:
        """This session's recording as its file holds it now (the writer commits about twice
        a second), for a report page; None when it is not recording. A file that cannot be
        read raises :class:`RecordingError`."""
        writer = self._session.recording_control.writer
        if writer is None:
            return None
        from .recorded import load_recorded

        return load_recorded(writer.path, writer.session_id)

    def _ledger_changed(self) -> None:
        """Tell the widget and the static pictures that a cell was recorded or a mark set
        (main thread: what the sampler's thread sent may never have shown, as in Colab)."""
        if self._publisher is not None:
            self._publisher.ledger_changed()
        for view in self._static_views:
            view.refresh()

    def _told_before_reply(self) -> bool:
        """Whether a view must hear of a cell's end before its reply: static pictures are
        redrawn in the cell's output, and the chart is sent it from the main thread where its
        front end drops other threads' messages (Colab) or the sampler has not ticked lately."""
        publisher = self._publisher
        return bool(self._static_views) or (publisher is not None and publisher.main_thread_now())

    def _cell_opened(self) -> None:
        """A cell's measurement has begun (main thread): the widget shows it as running."""
        if self._publisher is not None:
            self._publisher.running_changed()

    def cells_frame(self) -> pandas.DataFrame:
        """The ledger as a pandas DataFrame, one row per record."""
        from .._views.frames import cells_frame

        return cells_frame(self.cells())

    def samples_frame(self, t0: float | None = None, t1: float | None = None) -> pandas.DataFrame:
        """The timeline between unix times ``t0`` and ``t1`` (default: all of it) as a
        DataFrame: ``time`` (UTC) and one column per timeline column. Older parts come from
        the 1 s / 10 s / 1 min buckets (their means)."""
        from .._views.frames import samples_frame

        window = self.timeline.window(
            -math.inf if t0 is None else t0, math.inf if t1 is None else t1
        )
        return samples_frame(window.times, window.mean, list(self.timeline.columns))

    @forwards_to(FitArguments)
    def fit(self, *args: Any, **kwargs: Any) -> FitResult:
        """Run ``step(size)`` at each size as a tracked region, fit each kind of memory's
        peak growth against the size, and predict the largest size that fits (what
        :func:`nbgpumon.fit` does)."""
        from .._session.analysis.size_fit import run_fit
        from .._views.reprs.fit_result import FitResult

        asked = FitArguments(*args, **kwargs)
        if self.closed:
            raise UsageError("this monitor is closed; nbgpumon.monitor() gives the current one")
        return FitResult(run_fit(self._session, asked))

    @forwards_to(WhatifArguments)
    def whatif(self, *args: Any, **kwargs: Any) -> WhatifResult:
        """Run ``step`` as it is and under each fix, each run a tracked region, and show what
        each fix saves of its peak (what :func:`nbgpumon.whatif` does)."""
        from .._session.analysis.whatif import run_whatif
        from .._views.reprs.whatif_result import WhatifResult

        asked = WhatifArguments(*args, **kwargs)
        if self.closed:
            raise UsageError("this monitor is closed; nbgpumon.monitor() gives the current one")
        return WhatifResult(run_whatif(self._session, asked))

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        from .._session.analysis.advice import live_evidence
        from .._views.words.advice import advise, hints_text

        return hints_text(advise(live_evidence(self._session, self._session.shell())))


_EXPORT_SETTINGS = ["export_port", "export_host"]


def _say_setting(fact: SettingOutcome | SettingRefused) -> None:
    """What a ``%config GPUMon.x = v`` did or refused, printed under the cell that ran it
    (traitlets calls this on the main thread, inside ``%config``)."""
    from .._views.status.settings import setting_line

    print(f"nbgpumon: {setting_line(fact)}")


_RETRY = "%gpumon export PORT picks another"


def _restart(stopped: Exporter) -> Exporter | None:
    """The exporter ``stopped`` was, started again (None if its port was taken meanwhile)."""
    try:
        return Exporter(stopped.collector, stopped.host, stopped.port, _RETRY)
    except UsageError:
        return None
