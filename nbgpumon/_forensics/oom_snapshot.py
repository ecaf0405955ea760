"""The out-of-memory flight recorder keeps what a cell that ran out of GPU memory held, for a viewer
and the post-mortem. When a cell runs out of GPU memory in the framework whose recorder allocation
tracing uses (torch's), its full memory snapshot is saved for the viewer the plug-in names
(https://pytorch.org/memory_viz), and the post-mortem lists the largest live blocks by the cell and
line that allocated them.

The snapshot is taken in the cell's post_run_cell, while the stored traceback still holds the
failing frames, so their blocks are in it. It goes to a new file, created exclusively (never
over an existing one): next to the recording (``run.sqlite.oom-12.pickle``) when recording,
else in a folder nbgpumon makes once per kernel (``/tmp/nbgpumon-oom-XXXX/oom-12.pickle``).
Only the last ``KEEP`` files this kernel wrote are kept; older ones are deleted, and only when
the file at that path is still the one nbgpumon created (same device and inode).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import pickle
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._foundation.errors import failure_line
from .tracing import TracedAllocation, attribute_blocks

KEEP = 5  # snapshot files kept per kernel: an OOM loop must not fill the disk
LARGEST = 5  # groups of live blocks the post-mortem lists
_NAMES_TRIED = 100  # oom-12.pickle, oom-12-2.pickle, ...: then give up with one line


# What became of an out-of-memory cell's snapshot (FlightRecord.state)
SAVED = "saved"
NOT_TRACING = "not tracing"  # allocation tracing is off
TRACING_NOT_YET = "not yet"  # tracing was not recording yet during the cell
FAILED = "failed"  # taking or saving it failed (``problem`` says which, and why)


@dataclass(frozen=True)
class FlightRecord:
    """The memory snapshot of one out-of-memory cell, as the post-mortem tells of it (its
    words: ``_views/memory/oom.py``)."""

    state: str  # SAVED, NOT_TRACING, TRACING_NOT_YET or FAILED
    largest: tuple[TracedAllocation, ...] = ()  # groups of live blocks, biggest first
    path: str | None = None  # the file written, if any
    size: int = 0  # its bytes
    viewer: str = ""  # where it can be opened (the plug-in's, e.g. torch's memory_viz)
    problem: str = ""  # FAILED: what failed, as one line


def candidate_names(base: str, execution_count: int | None) -> Iterator[str]:
    """Paths to try in turn: ``{base}.oom-12.pickle``, ``{base}.oom-12-2.pickle``, ...
    (``base`` ends with a separator for a folder of its own: ``DIR/oom-12.pickle``)."""
    stem = f"oom-{execution_count}" if execution_count is not None else "oom"
    dot = "" if base.endswith(os.sep) else "."
    yield f"{base}{dot}{stem}.pickle"
    for n in range(2, _NAMES_TRIED + 1):
        yield f"{base}{dot}{stem}-{n}.pickle"


def largest_live(
    snapshot: Any,
    filename_map: Mapping[str, int],
    execution_count: int | None,
    getline: Callable[[str, int], str] = linecache.getline,
    n: int = LARGEST,
) -> tuple[TracedAllocation, ...]:
    """The ``n`` biggest groups of all live blocks in ``snapshot`` by cell and line."""
    found = attribute_blocks(snapshot, set(), filename_map, execution_count, getline=getline)
    return tuple(found[:n])


class SnapshotStore:
    """Writes snapshot files, each new and exclusive; keeps the last ``keep`` of them."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._folder: str | None = None  # made on first use, once per kernel
        self._written: deque[tuple[str, int, int]] = deque()  # (path, st_dev, st_ino)

    def save(self, snapshot: Any, recording: str | None, execution_count: int | None) -> str:
        """Pickle ``snapshot`` to a new file next to ``recording`` (a path) or in this kernel's
        temporary folder; returns its path. Raises OSError or pickle's errors; a file it
        created and could not finish is removed."""
        base = recording if recording else os.path.join(self._temporary_folder(), "")
        path, file = _create_new(base, execution_count)
        try:
            with file:
                pickle.dump(snapshot, file, protocol=pickle.HIGHEST_PROTOCOL)
                stat = os.fstat(file.fileno())
        except BaseException:
            _remove_quietly(path)
            raise
        self._written.append((path, stat.st_dev, stat.st_ino))
        while len(self._written) > self.keep:
            self._delete_ours(*self._written.popleft())
        return path

    @property
    def files(self) -> list[str]:
        """The snapshot files kept, oldest first."""
        return [path for path, _, _ in self._written]

    def _temporary_folder(self) -> str:
        if self._folder is None or not os.path.isdir(self._folder):
            self._folder = tempfile.mkdtemp(prefix="nbgpumon-oom-")
        return self._folder

    @staticmethod
    def _delete_ours(path: str, device: int, inode: int) -> None:
        try:
            stat = os.stat(path)
        except OSError:
            return  # gone already
        if (stat.st_dev, stat.st_ino) == (device, inode):  # still the file nbgpumon wrote
            _remove_quietly(path)


def _create_new(base: str, execution_count: int | None) -> tuple[str, Any]:
    for path in candidate_names(base, execution_count):
        try:
            return path, open(path, "xb")  # exclusive: never over an existing file
        except FileExistsError:
            continue
    raise FileExistsError(f"{_NAMES_TRIED} snapshot files named {base}.oom-* exist already")


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def flight_record(
    full_snapshot: Callable[[], Any],
    store: SnapshotStore,
    filename_map: Mapping[str, int],
    execution_count: int | None,
    recording: str | None,
    viewer: str = "",
) -> FlightRecord:
    """Take the recorder's full snapshot, save it, and attribute its live blocks; never raises.
    ``viewer``: where the file can be opened (the plug-in's, e.g. torch's memory_viz)."""
    try:
        snapshot = full_snapshot()
    except Exception as exc:
        return FlightRecord(FAILED, problem=failure_line("memory snapshot not taken", exc))
    try:
        largest = largest_live(snapshot, filename_map, execution_count)
    except Exception:  # a snapshot in a layout this version does not know: still save it
        largest = ()
    try:
        path = store.save(snapshot, recording, execution_count)
        size = os.path.getsize(path)
    except Exception as exc:
        return FlightRecord(FAILED, largest, problem=failure_line("memory snapshot not saved", exc))
    return FlightRecord(SAVED, largest, path, size, viewer)
