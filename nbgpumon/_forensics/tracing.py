"""Allocation tracing: which notebook cell and line allocated the CUDA memory a cell left behind.

``%gpumon trace on`` turns on the memory-history recorder of a framework plug-in that has one
(:class:`~nbgpumon._sources.frameworks.memory_history.MemoryHistory`; torch's
``torch.cuda.memory._record_memory_history``, see ``frameworks/torch/history.py``), which
stores the Python stack of every live allocator block. After each cell, the blocks that are
alive now but were not alive when the cell started are grouped by the innermost notebook-cell
frame of their stack. A snapshot is taken only when the allocation count has moved (each costs
microseconds per live block); the cell's tag on allocations is set only so that a snapshot the
user dumps for the framework's viewer shows which cell each allocation came from.

IPython's ``compile.cache()`` sets ``_filename_map[cell filename] = execution count`` and puts
the cell's lines in ``linecache`` just before the cell runs. ipykernel names a cell file by a
hash of its text (``/tmp/ipykernel_PID/HASH.py``), so identical cells share one name and the map
holds the count of the latest run of that text (IPython 9, ipykernel 7).
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._foundation.clipping import clipped
from .._foundation.errors import failure_line
from .._ledger.traced import TracedAllocation  # (a record keeps them: the ledger's class)
from .._sources.frameworks import frameworks
from .._sources.frameworks.memory_history import MemoryHistory
from .tracing_answer import (
    ALREADY_ON,
    REFUSED,
    STARTED,
    STOP_FAILED,
    STOPPED,
    WAITING,
    WAS_NOT_ON,
    TracingAnswer,
)

SOURCE_CHARS = 80
_ACTIVE = "active_allocated"


# -- pure functions over a snapshot: testable without a GPU --------------------------------
def live_block_keys(snapshot: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> set[int]:
    """One int per live block: address, size and allocation site hashed together.

    The allocation site is there so that a block freed and reallocated at the same address by
    other code within one cell still counts as new.
    """
    return {_block_key(b) for _, b in _live_blocks(snapshot)}


def attribute_blocks(
    snapshot: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    alive_at_start: set[int],
    filename_map: Mapping[str, int],
    execution_count: int | None,
    cell_filename: str | None = None,
    getline: Callable[[str, int], str] = linecache.getline,
    live_keys: set[int] | None = None,
) -> list[TracedAllocation]:
    """Live blocks of ``snapshot`` not in ``alive_at_start``, grouped by cell line, biggest first.

    ``snapshot`` is ``torch.cuda.memory._snapshot()`` or its ``"segments"`` list.
    ``filename_map`` is IPython's ``shell.compile._filename_map``; a frame whose filename is
    ``cell_filename`` (the cell that just ran) gets ``execution_count``, because identical cell
    texts share a filename. Blocks with no cell frame (another thread, autograd's backward) are
    put on ``execution_count`` with line 0: they were allocated while that cell ran.
    ``live_keys``, when given, receives :func:`live_block_keys` of ``snapshot`` (one pass).
    """

    blocks = []
    for device, block in _live_blocks(snapshot):
        key = _block_key(block)
        if live_keys is not None:
            live_keys.add(key)
        if key not in alive_at_start:
            blocks.append((device, int(block.get("size") or 0), block.get("frames") or ()))
    return group_by_line(blocks, filename_map, execution_count, cell_filename, getline)


def group_by_line(
    blocks: Iterable[tuple[int, int, Sequence[Mapping[str, Any]]]],
    filename_map: Mapping[str, int],
    execution_count: int | None,
    cell_filename: str | None = None,
    getline: Callable[[str, int], str] = linecache.getline,
) -> list[TracedAllocation]:
    """``blocks`` ((device, bytes, frames) each) grouped by the innermost notebook-cell frame
    of their stacks, biggest first (see :func:`attribute_blocks`)."""

    def count(frame: Mapping[str, Any]) -> int | None:
        name = frame.get("filename")
        return execution_count if name == cell_filename else filename_map.get(name)

    groups: dict[tuple, list[int]] = {}
    sources: dict[tuple[str, int], str] = {}  # many blocks come from one line
    for device, size, frames in blocks:
        cells = [f for f in frames if f.get("filename") in filename_map]
        caller_cell = caller_line = None
        if cells:
            inner, outer = cells[0], cells[-1]
            cell, line = count(inner), int(inner.get("line") or 0)
            where = (inner.get("filename", ""), line)
            source = sources.get(where)
            if source is None:
                source = sources[where] = _source_line(*where, getline)
            if count(outer) != cell:
                caller_cell, caller_line = count(outer), int(outer.get("line") or 0)
        else:
            cell, line, source = execution_count, 0, _describe_frame(frames)
        entry = groups.setdefault((device, cell, line, source, caller_cell, caller_line), [0, 0])
        entry[0] += size
        entry[1] += 1
    found = [
        TracedAllocation(size, n, device, cell, line, source, caller_cell, caller_line)
        for (device, cell, line, source, caller_cell, caller_line), (size, n) in groups.items()
    ]
    found.sort(key=lambda a: (-a.bytes, a.device, a.cell or 0, a.line))
    return found


def _live_blocks(
    snapshot: Mapping[str, Any] | Iterable[Mapping[str, Any]],
) -> Iterable[tuple[int, Mapping[str, Any]]]:
    segments = snapshot.get("segments", ()) if isinstance(snapshot, Mapping) else snapshot
    for segment in segments:
        device = int(segment.get("device", 0))
        address = int(segment.get("address", 0))
        for block in segment.get("blocks", ()):
            if "address" not in block:  # torch < 2.1 left it out: blocks tile their segment
                block = {**block, "address": address}
            address = int(block["address"]) + int(block.get("size", 0))
            if block.get("state") == _ACTIVE:
                yield device, block


def _block_key(block: Mapping[str, Any]) -> int:
    frames = block.get("frames") or ()
    site = (frames[0].get("filename"), frames[0].get("line")) if frames else None
    return hash((block["address"], block.get("size"), site))


def _source_line(filename: str, line: int, getline: Callable[[str, int], str]) -> str:
    text = getline(filename, line).strip() if line > 0 else ""
    return clipped(text, SOURCE_CHARS)


def _describe_frame(frames: Iterable[Mapping[str, Any]]) -> str:
    """``fn (file.py:12)`` for the innermost frame outside the frameworks' own packages (a
    data loader's frames inside torch), or ""."""
    frames = list(frames)
    inside = tuple(f"{os.sep}{f.module}{os.sep}" for f in frameworks())
    outside = [f for f in frames if not any(p in str(f.get("filename", "")) for p in inside)]
    for frame in outside or frames:
        name = os.path.basename(str(frame.get("filename", "")))
        return f"{frame.get('name', '?')} ({name}:{frame.get('line', 0)})"
    return ""


# -- the tracer: owns a plug-in's recorder while tracing is on ------------------------------
def recorder() -> MemoryHistory | None:
    """The memory history of the first registered plug-in that records one, preferring one
    whose framework the user imported; None when no plug-in can."""
    able = [f for f in frameworks() if f.memory_history is not None]
    imported = [f for f in able if f.module in sys.modules]
    chosen = (imported or able)[:1]
    return chosen[0].memory_history if chosen else None


class AllocationTracer:
    """Records allocation stacks and attributes each cell's surviving blocks to lines.

    Never imports a framework and never initialises a device: it acts only once the user's code
    has imported the framework and initialised its device. No method raises; problems end up
    in ``error``.
    """

    def __init__(
        self, shell: Any, max_entries: int = 100_000, history: MemoryHistory | None = None
    ) -> None:
        self.shell = shell
        # alloc/free events kept in the recorder's ring buffer (for viewer dumps; 0: none)
        self.max_entries = max_entries
        self.history = history if history is not None else recorder()
        self.error = ""
        self._armed = False
        self._recording = False
        self._ours = False  # we turned the recorder on, so we turn it off
        self._alive_at_start: set[int] | None = None
        # what was alive when the last cell ended, and the allocation counts just before:
        # when the counts have not moved by the next cell start, that set is still right
        self._alive_after: set[int] | None = None
        self._counts_after: tuple[int, ...] | None = None
        self._counts_at_start: tuple[int, ...] | None = None
        self._tag = ""

    @property
    def active(self) -> bool:
        """Recording now."""
        return self._recording

    @property
    def armed(self) -> bool:
        """``trace on`` was asked; recording may wait for the device to be initialised."""
        return self._armed

    @property
    def viewer(self) -> str:
        """Where a full snapshot can be opened ("" when nowhere)."""
        return self.history.viewer if self.history is not None else ""

    @property
    def _whose(self) -> str:
        return f"{self.history.label}'s" if self.history is not None else "the"

    def start(self) -> TracingAnswer:
        """Turn tracing on, or arm it until the device is up; what that did."""
        history = self.history
        if history is None:
            self.error = "no framework plug-in records allocation history"
            return TracingAnswer(REFUSED, problem=self.error)
        self._armed = True
        if self._recording:
            return TracingAnswer(ALREADY_ON, history.label, not self._ours)
        if not history.ready():
            return TracingAnswer(WAITING, history.label)
        return self._begin(history)

    def stop(self) -> TracingAnswer:
        """Turn tracing off (the framework's recorder too, when nbgpumon turned it on); what
        that did."""
        was_armed, was_recording, ours = self._armed, self._recording, self._ours
        self._armed = self._recording = self._ours = False
        self._alive_at_start = self._alive_after = None
        history = self.history
        if history is not None and history.ready():
            self._clear_tag(history)
        if not was_recording or history is None:
            return TracingAnswer(STOPPED if was_armed else WAS_NOT_ON)
        if not ours:
            return TracingAnswer(STOPPED, history.label, theirs=True)
        try:
            history.disable()
        except Exception as exc:
            self.error = failure_line(f"stopping {self._whose} memory recorder failed", exc)
            return TracingAnswer(STOP_FAILED, history.label, problem=self.error)
        return TracingAnswer(STOPPED, history.label)

    def cell_started(self, execution_count: int | None) -> None:
        """At pre_run_cell, starts recording if armed and the device is now up, and notes what is
        alive."""
        self._alive_at_start = None
        after, self._alive_after = self._alive_after, None
        history = self.history
        try:
            if history is None or not history.ready():
                return
            if self._armed and not self._recording:
                self._begin(history)
            if not self._recording or not self._still_recording(history):
                return
            # a snapshot costs microseconds per live block: skip it when nothing was allocated
            counts = history.allocation_counts()
            if after is None or counts is None or counts != self._counts_after:
                after = live_block_keys(history.snapshot())
            self._alive_at_start, self._counts_at_start = after, counts
            self._set_tag(history, execution_count)
        except Exception as exc:
            self._alive_at_start = None
            self.error = failure_line("allocation tracing failed at cell start", exc)

    def cell_finished(self, execution_count: int | None) -> list[TracedAllocation]:
        """At post_run_cell, this cell's surviving blocks by cell line, biggest first."""
        alive, self._alive_at_start = self._alive_at_start, None
        history = self.history
        try:
            if history is None or not history.ready():
                return []
            self._clear_tag(history)
            if self._armed and not self._recording:
                self._begin(history)  # this cell initialised the device: trace from the next
                return []
            if alive is None or not self._recording:
                return []
            compile_ = getattr(self.shell, "compile", None)
            filename_map = getattr(compile_, "_filename_map", None) or {}
            counts = history.allocation_counts()  # before the snapshot: a later alloc shows
            if counts is not None and counts == self._counts_at_start:
                self._alive_after, self._counts_after = alive, counts
                return []  # the cell allocated nothing
            live: set[int] = set()
            found = attribute_blocks(
                history.snapshot(), alive, filename_map, execution_count, live_keys=live
            )
            if counts is not None:
                self._alive_after, self._counts_after = live, counts
            return found
        except Exception as exc:
            self.error = failure_line("allocation tracing failed at cell end", exc)
            return []

    def full_snapshot(self) -> Any:
        """The recorder's whole snapshot, with the event ring buffer that the viewer's
        timeline draws (100-200 ms for torch's), for the out-of-memory flight recorder; only
        while recording. Raises what the framework raises."""
        history = self.history
        if history is None or not history.ready() or not self._recording:
            raise RuntimeError("allocation tracing is not recording")
        return history.full_snapshot()

    def requested_bytes(self, device: int) -> tuple[int, int] | None:
        """What live allocations on CUDA device ``device`` asked for now and at their peak
        since the cell began, in the units of the recorder's events (None: unknown, or not
        recording)."""
        history = self.history
        if history is None or not self._recording:
            return None
        try:
            return history.requested_bytes(device)
        except Exception:
            return None

    # -- the recorder ----------------------------------------------------------------------
    def _begin(self, history: MemoryHistory) -> TracingAnswer:
        """Turn the recorder on (the device is initialised); what that did."""
        reason = history.unsupported()
        if reason:
            self._armed = False
            self.error = reason
            return TracingAnswer(REFUSED, history.label, problem=self.error)
        try:
            if history.enabled():
                self._ours = False  # someone else's recorder: read it, leave its settings
            else:
                history.enable(self.max_entries)
                self._ours = True
        except Exception as exc:
            self._armed = False
            self.error = failure_line(f"starting {self._whose} memory recorder failed", exc)
            return TracingAnswer(REFUSED, history.label, problem=self.error)
        self._recording = True
        self.error = ""
        return TracingAnswer(STARTED, history.label, theirs=not self._ours)

    def _still_recording(self, history: MemoryHistory) -> bool:
        if history.enabled() is False:  # turned off behind our back: respect that
            self._armed = self._recording = self._ours = False
            self.error = f"{self._whose} memory recorder was turned off outside nbgpumon"
            return False
        return True

    def _set_tag(self, history: MemoryHistory, execution_count: int | None) -> None:
        """Label this cell's allocations in the recorder's trace, unless the user set their
        own label."""
        if execution_count is None or self.max_entries <= 0:  # no trace entries to label
            return
        if history.tag() in ("", self._tag):
            self._tag = f"nbgpumon In[{execution_count}]"
            history.set_tag(self._tag)

    def _clear_tag(self, history: MemoryHistory) -> None:
        if not self._tag:
            return
        try:
            if history.tag() == self._tag:
                history.set_tag("")
        except Exception:
            pass  # a label left behind is harmless
        self._tag = ""
