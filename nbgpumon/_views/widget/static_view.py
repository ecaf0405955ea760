"""``%gpumon --static`` shows the chart as an SVG picture that one display updates in place; in a
terminal, the chart's text, printed once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..status.session_status import status_line
from ..words.text_view import pre_html
from .live_chart import plain_summary, static_svg

if TYPE_CHECKING:
    from ..._session.facts.session_data import SessionData

# What a terminal can show instead of a chart that moves: the last line of its printed view.
TERMINAL_NOTE = (
    "nbgpumon: a terminal shows this once; %gpumon summary on prints a line after each cell, "
    "%gpumon snapshot the devices now"
)


def terminal_view(data: SessionData) -> str:
    """What ``%gpumon`` and ``%gpumon --static`` show in a terminal: the chart's text as of now (the
    devices, the newest cells) and what a terminal can show. It is printed once, never updated (a
    terminal cannot replace what it printed, so an update would print it all again)."""
    return f"{plain_summary(data)}\n{TERMINAL_NOTE}"


class StaticView:
    """The picture of ``%gpumon --static``, an SVG updated in place at most once a second.

    For front ends where widget messages from a background thread don't show (Colab). The
    update goes through a display id, so it replaces the picture instead of adding output. The
    sampler's thread redraws it while a cell runs; ``refresh`` redraws it from the main thread
    after each cell, so a front end that drops output from other threads (Colab) and a headless
    run that saves the notebook (nbclient keeps only updates made while a cell runs) still get
    every sample, a cell late at most. Only in a kernel: a terminal gets :func:`terminal_view`.
    """

    def __init__(self, data: SessionData, display: Callable[..., Any], every: float = 1.0) -> None:
        self._data, self._every = data, every
        self._next = 0.0
        self._handle = display(self._bundle(), raw=True, display_id=True)
        self._unsubscribe = data.subscribe(self)

    def _bundle(self) -> dict[str, str]:
        svg, line = static_svg(self._data), status_line(self._data.status())
        return {
            "image/svg+xml": svg,
            "text/plain": plain_summary(self._data),
            "text/html": f"<div>{svg}{pre_html(line)}</div>",
        }

    def __call__(self, cursor: int) -> None:
        now = time.monotonic()
        if now < self._next or self._handle is None:
            return
        self._next = now + self._every
        self._handle.update(self._bundle(), raw=True)

    def refresh(self) -> None:
        """Redraw now, whatever the last redraw was (main thread, after a cell)."""
        if self._handle is not None:
            self._next = time.monotonic() + self._every
            self._handle.update(self._bundle(), raw=True)

    def close(self) -> None:
        self._unsubscribe()
