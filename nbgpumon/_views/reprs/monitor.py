"""The live monitor as a cell's end shows it (``nbgpumon.monitor()``): its status line, its
ledger's size, what it is recording or serving, and where to look next."""

from __future__ import annotations

from collections.abc import Sequence

from ..._ledger.records import CellRecord
from ..._session.facts.status import Status
from ..status.recorder import recorder_line
from ..status.session_status import exporter_line, status_line
from ..words.recording_cells import cells_words
from ..words.text_view import pre_html
from .short import short_text

_NEXT = "%gpumon shows the live chart; .cells(), .cells_frame(), .samples_frame(), .advise()"


def monitor_lines(status: Status, cells: Sequence[CellRecord]) -> list[str]:
    """The status line, the cells in the ledger, the recording and the exporter (when on)."""
    lines = [f"nbgpumon monitor: {status_line(status)}", f"  {cells_words(cells)} in the ledger"]
    live = status.live
    if live is not None and live.recording is not None:
        lines.append(f"  recording: {recorder_line(live.recording)}")
    if live is not None and live.exporter is not None:
        lines.append(f"  exporter: {exporter_line(live.exporter)}")
    return [*lines, f"  {_NEXT}"]


def monitor_text(status: Status, cells: Sequence[CellRecord]) -> str:
    """:func:`monitor_lines` as the repr: at most ``REPR_LIMIT`` characters."""
    return short_text(monitor_lines(status, cells), "%gpumon status says it all")


def monitor_html(status: Status, cells: Sequence[CellRecord]) -> str:
    return pre_html(monitor_text(status, cells))
