"""The recorder in words, from its facts (``_recording/notices.py``). They say what a start or a
stop did (``%gpumon record``), what it is doing (status, the monitor's repr), and what it met while
recording (a full disk, the file gone from its path), said under the cell."""

from __future__ import annotations

from ..._foundation.wording import counted, format_seconds
from ..._recording.faults import FULL, IO_ERROR, MOVED, PERMISSION, READ_ONLY
from ..._recording.file_identity import DELETED
from ..._recording.file_identity import MOVED as MOVED_AWAY
from ..._recording.notices import (
    FileWent,
    Kept,
    Notice,
    RecorderState,
    RecordingChange,
    Stopped,
)


def recording_change_line(change: RecordingChange) -> str:
    """What a start or a stop did, in one line: ``recording to run.sqlite (session 2)``,
    ``recording stopped; 1,200 samples in run.sqlite``, or the fault that had stopped it already."""
    if change.path is None:
        return "not recording"
    if change.started:
        line = f"recording to {change.path} (session {change.session_id})"
        folder = change.created_folder
        return line + (f"; created the folder {folder}" if folder else "")
    if change.fault is not None:
        return notice_line(change.fault)  # the words said when it stopped
    return f"recording stopped; {counted(change.samples, 'sample')} in {change.path}"


def recorder_line(state: RecorderState) -> str:
    """What the recorder is doing: where it records, or what it met last."""
    return notice_line(state.last) if state.last is not None else f"recording to {state.path}"


def notice_line(notice: Notice) -> str:
    """What the recorder met while recording, in one line."""
    if isinstance(notice, Stopped):
        return _stopped_line(notice)
    return _file_went_line(notice)


def kept_words(kept: Kept) -> str:
    """What the file holds of this session: "the 41 cells and 3 min 5 s of samples" ("" for
    nothing)."""
    if not kept:
        return ""
    parts = [counted(kept.cells, "cell")] if kept.cells else []
    if kept.sampled is not None:
        parts.append(f"{format_seconds(kept.sampled)} of samples")
    return "the " + " and ".join(parts)


def _stopped_line(n: Stopped) -> str:
    """What happened, what the file keeps, what to do."""
    kept = kept_words(n.kept)
    kept = f"{kept} before it are in the file" if kept else "nothing was in it yet"
    what = {
        FULL: f"the disk holding {n.path} is full",
        IO_ERROR: f"an I/O error writing {n.path}" + (f" ({n.detail})" if n.detail else ""),
        READ_ONLY: f"the file system holding {n.path} became read-only",
        PERMISSION: f"permission to write {n.path} was taken away",
        MOVED: f"{n.path} is no longer there",
    }[n.kind]
    hint = {
        FULL: "free some space, then %gpumon record PATH starts a new session",
        READ_ONLY: "%gpumon record PATH on a writable disk starts a new one",
    }.get(n.kind, "%gpumon record PATH starts a new one")
    return f"recording stopped: {what}; {kept} ({hint})"


def _file_went_line(n: FileWent) -> str:
    """Where the file went, whether recording goes on at its path, and what the old one has."""
    kept = kept_words(n.kept)
    if not kept:
        old = "nothing had been written to the old file"
    elif n.named:
        old = f"the old file, wherever it went, keeps {kept} before it"
    else:
        old = f"{kept} before it are lost with the old file"
    gone = n.what in (DELETED, MOVED_AWAY)  # (else replaced by another file)
    happened = {DELETED: "was deleted", MOVED_AWAY: "was moved away"}.get(
        n.what, "was replaced by another file"
    )
    if n.new_session is None:
        there = (
            "no new file can be made there"
            if gone
            else "nbgpumon writes nothing into what is there now"
        )
        return (
            f"recording stopped: {n.path} {happened} while recording, and {there} "
            f"({n.reason}); {old}"
        )
    where = "a new file at" if gone else "the file now at"
    return (
        f"{n.path} {happened} while recording; recording goes on in {where} "
        f"{n.path} (session {n.new_session}); {old}"
    )
