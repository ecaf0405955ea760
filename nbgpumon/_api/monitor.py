"""``Monitor``: this process's session with its views (the live chart, the static picture, the
frames and the advice). What ``nbgpumon.monitor()`` returns."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from traitlets import TraitError

from .._foundation.errors import UsageError
from .._session.config import GPUMon
from .._session.session import Session, no_shell
from .exporter import Exporter, process_rank

if TYPE_CHECKING:
    import pandas

    from .._sources.devices.protocol import DeviceSource
    from .._views.fit_result import FitResult
    from .._views.static_view import StaticView
    from .._views.widget import GPUMonWidget, Publisher

# The views (anywidget and ipywidgets, numpy, pandas) are imported when first used, not by
# ``%load_ext``: together they cost more than the rest of loading (docs/benchmarks.md).


class Monitor(Session):
    """Everything nbgpumon measures in this process, and the views of it. Usable without
    IPython."""

    def __init__(
        self,
        config: GPUMon | None = None,
        nvml_module: ModuleType | None = None,
        shell: Callable[[], Any] = no_shell,
        new_device_source: Callable[[], DeviceSource] | None = None,
    ) -> None:
        super().__init__(config, nvml_module, shell, new_device_source)
        self._publisher: Publisher | None = None
        self._static_views: list[StaticView] = []
        self._exporter: Exporter | None = None
        self._collector: Any = None  # the exporter's SessionCollector, kept across restarts
        self._syncing_export = False  # set while export() writes GPUMon.export_port/host
        self.config.observe(self._export_setting_changed, names=_EXPORT_SETTINGS)

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
        super().close()

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
            return f"exporting on {old.line}"
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
        return self._exporter.line if self._exporter is not None else ""

    def _exporter_collector(self) -> Any:
        if self._collector is None:
            from .exporter_families import SessionCollector  # prometheus_client: on use

            self._collector = SessionCollector(self, rank=process_rank())
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
        from .._views.widget import GPUMonWidget, Publisher

        if self._publisher is None:
            self._publisher = Publisher(self, GPUMonWidget(self))
        else:
            self._publisher.refresh_history()  # a new view starts from a recent snapshot
        return self._publisher.widget

    def static_view(self, display: Callable[..., Any]) -> StaticView:
        """An SVG picture shown with ``display`` (IPython's) that updates in place about once
        a second (Colab)."""
        from .._views.static_view import StaticView

        view = StaticView(self, display)
        self._static_views.append(view)
        return view

    def ledger_changed(self) -> None:
        """Tell the widget and the static pictures that a cell was recorded or a mark set
        (main thread: what the sampler's thread sent may never have shown, as in Colab)."""
        if self._publisher is not None:
            self._publisher.ledger_changed()
        for view in self._static_views:
            view.refresh()

    def cell_opened(self) -> None:
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

    def fit(
        self,
        step: Callable[[int], Any],
        sizes: Iterable[int],
        limit: int | str | Mapping[str, int | str] | None = None,
        margin: int | str | None = None,
        label: str = "fit",
        warmup: bool = True,
    ) -> FitResult:
        """Run ``step(size)`` at each size as a tracked region, fit each kind of memory's
        peak growth against the size, and predict the largest size that fits (what
        :func:`nbgpumon.fit` does)."""
        from .._session.size_fit import run_fit
        from .._views.fit_result import FitResult

        if self.closed:
            raise UsageError("this monitor is closed; nbgpumon.monitor() gives the current one")
        return FitResult(run_fit(self, step, sizes, limit, margin, label, warmup))

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        from .._session.advice import live_evidence
        from .._views.advisor import advise, hints_text

        return hints_text(advise(live_evidence(self, self._shell())))


_EXPORT_SETTINGS = ["export_port", "export_host"]
_RETRY = "%gpumon export PORT picks another"


def _restart(stopped: Exporter) -> Exporter | None:
    """The exporter ``stopped`` was, started again (None if its port was taken meanwhile)."""
    try:
        return Exporter(stopped.collector, stopped.host, stopped.port, _RETRY)
    except UsageError:
        return None
