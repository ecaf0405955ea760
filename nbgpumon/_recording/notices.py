"""What a recording met and did, as facts: a fault that stopped it, its file gone from its path
(and whether it goes on in a new one), a start or a stop. The writer's thread keeps the
notices for the main thread, which has the views word them (``_views/status/recorder.py``)
under the cell during which it happened (invariant 14)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Kept:
    """What the file at the path holds of this session."""

    cells: int  # cells and regions written
    sampled: float | None  # seconds from the first sample written to the last; None: none

    def __bool__(self) -> bool:
        return bool(self.cells) or self.sampled is not None


@dataclass(frozen=True, slots=True)
class Stopped:
    """A write failed and the recording stopped: ``kind`` is ``faults``' (FULL, IO_ERROR,
    READ_ONLY, PERMISSION, MOVED); ``detail``: SQLite's or the system's own words."""

    kind: str
    path: Path
    kept: Kept
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FileWent:
    """The file left its path while recording (``what``: ``file_identity``'s DELETED, MOVED
    or REPLACED): the recording goes on in a new session at the path, or stops."""

    what: str
    path: Path
    kept: Kept  # what the old file had of this session
    named: bool  # the old file still has a name somewhere
    new_session: int | None  # where it goes on; None: it stopped
    reason: str = ""  # stopped: why nothing can be written at the path now


Notice = Stopped | FileWent


@dataclass(frozen=True, slots=True)
class RecorderState:
    """What the recorder is doing: writing to ``path``, or what it met last (a notice)."""

    path: Path
    last: Notice | None = None


@dataclass(frozen=True, slots=True)
class RecordingChange:
    """What starting or stopping the recording did. Started: the file, its session and the
    folder made for it. Stopped: the samples in the file, or the fault that stopped it
    already. ``path`` None: there was no recording to stop."""

    started: bool
    path: Path | None
    session_id: int = 0
    created_folder: Path | None = None
    samples: int = 0
    fault: Notice | None = None
