"""``Monitor``: this process's session with its views (the live chart, the static picture, the
frames and the advice). What ``nbgpumon.monitor()`` returns."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._forensics.modules import fp32_cuda_modules
from .._session.config import GPUMon
from .._session.session import Session, no_shell
from .._views.advisor import advise, evidence, hints_text
from .._views.frames import cells_frame, samples_frame
from .._views.static_view import StaticView
from .._views.widget import GPUMonWidget, Publisher

if TYPE_CHECKING:
    import pandas


class Monitor(Session):
    """Everything nbgpumon measures in this process, and the views of it. Usable without
    IPython."""

    def __init__(
        self,
        config: GPUMon | None = None,
        nvml_module: ModuleType | None = None,
        shell: Callable[[], Any] = no_shell,
    ) -> None:
        super().__init__(config, nvml_module, shell)
        self._publisher: Publisher | None = None
        self._static_views: list[StaticView] = []

    def close(self) -> None:
        """Stop sampling for good, close the widget and release NVML."""
        if self.closed:
            return
        if self._publisher is not None:
            self._publisher.close()
            self._publisher = None
        for view in self._static_views:
            view.close()
        self._static_views.clear()
        super().close()

    # -- views ----------------------------------------------------------------------------
    def widget(self) -> GPUMonWidget:
        """The live chart; one per monitor, so showing it twice gives two views of one model."""
        if self._publisher is None:
            self._publisher = Publisher(self, GPUMonWidget(self))
        else:
            self._publisher.refresh_history()  # a new view starts from a recent snapshot
        return self._publisher.widget

    def static_view(self, display: Callable[..., Any]) -> StaticView:
        """An SVG picture shown with ``display`` (IPython's) that updates in place about once
        a second (Colab)."""
        view = StaticView(self, display)
        self._static_views.append(view)
        return view

    def ledger_changed(self) -> None:
        """Tell the widget, if any, that a cell was recorded or a mark set (main thread)."""
        if self._publisher is not None:
            self._publisher.ledger_changed()

    def cell_opened(self) -> None:
        """A cell's measurement has begun (main thread): the widget shows it as running."""
        if self._publisher is not None:
            self._publisher.running_changed()

    def cells_frame(self) -> pandas.DataFrame:
        """The ledger as a pandas DataFrame, one row per record."""
        return cells_frame(self.cells())

    def samples_frame(self, t0: float | None = None, t1: float | None = None) -> pandas.DataFrame:
        """The timeline between unix times ``t0`` and ``t1`` (default: all of it) as a
        DataFrame: ``time`` (UTC) and one column per timeline column. Older parts come from
        the 1 s / 10 s / 1 min buckets (their means)."""
        window = self.timeline.window(
            -math.inf if t0 is None else t0, math.inf if t1 is None else t1
        )
        return samples_frame(window.times, window.mean, list(self.timeline.columns))

    def advise(self) -> str:
        """Hints from what this session measured, each with the numbers behind it."""
        stats = self.ledger.read_allocator()
        retries = {
            d.nvml_index: stats[d.cuda_index].alloc_retries
            for d in self.nvml.devices
            if d.cuda_index in stats
        }
        shell = self._shell()
        fp32 = fp32_cuda_modules(shell) if shell is not None else None
        return hints_text(advise(evidence(self, retries, fp32)))
