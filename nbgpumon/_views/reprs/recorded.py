"""A loaded recording as a cell's end shows it (``nbgpumon.load(PATH)``): where it is, when and
how long it ran, its GPUs and cells, in a few lines, however many samples it holds."""

from __future__ import annotations

from collections.abc import Sequence

from ..._foundation.wording import counted, format_bytes, format_seconds, format_utc
from ..._ledger.records import CellRecord
from ..._recording.reader import RecordedSession
from ..status.damage import damage_line
from ..words.recording_cells import cells_words, earlier_cells
from ..words.text_view import pre_html
from .short import cut, cut_middle, short_text

_METHODS = ".cells(), .cells_frame(), .samples_frame(), .widget(), .report_html(), .export(DIR)"


def recorded_lines(
    session: RecordedSession, cells: Sequence[CellRecord], interval: float
) -> list[str]:
    """The recording's facts, a line each: the file and session, the machine, the samples'
    span, the GPUs, the cells (``cells``: the recording's own), what was lost, what to call."""
    lines = [f"nbgpumon recording: {cut_middle(str(session.path))}, session {session.session_id}"]
    if session.host or session.driver:
        lines.append(f"  made on {session.host or '?'}, driver {session.driver or '?'}")
    times = session.times
    if len(times):
        raw = len(times) - session.buckets
        every = f" every {interval:g} s" if interval else ""
        samples = f"{counted(raw, 'sample')}{every}"
        if session.buckets:
            samples += f" and {counted(session.buckets, 'one-minute bucket')} of older ones"
        span = format_seconds(float(times[-1] - times[0]))
        lines.append(f"  from {format_utc(float(times[0]))}, {span}: {samples}")
    else:
        lines.append(f"  from {format_utc(session.started)}: no samples")
    gpus = [
        f"gpu{g.get('index', i)} {g.get('name', '?')}"
        + (f" ({format_bytes(g['memory_total'])})" if g.get("memory_total") else "")
        for i, g in enumerate(session.gpus)
    ]
    lines.append(
        f"  {counted(len(gpus), 'GPU')}: {', '.join(gpus)}" if gpus else "  no GPU (host memory)"
    )
    marks = f", {counted(len(session.marks), 'mark')}" if session.marks else ""
    lines.append(f"  {cells_words(cells, earlier_cells(session))}{marks}")
    if session.lost is not None:
        lines.append(f"  damaged: {damage_line(session.lost)}")
    lines.append(f"  {_METHODS}")
    return [cut(line) for line in lines]


def recorded_text(session: RecordedSession, cells: Sequence[CellRecord], interval: float) -> str:
    """:func:`recorded_lines` as the repr: at most ``REPR_LIMIT`` characters."""
    return short_text(recorded_lines(session, cells, interval), "its attributes hold them")


def recorded_html(session: RecordedSession, cells: Sequence[CellRecord], interval: float) -> str:
    """The same lines as an HTML block (the path and labels escaped)."""
    return pre_html(recorded_text(session, cells, interval))
