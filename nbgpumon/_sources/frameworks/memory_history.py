"""What a framework plug-in that can record allocation history gives allocation tracing.

Tracing (``_forensics/tracing.py``) owns the state machine: armed, recording, what was alive
when a cell began, which cell and line allocated what survived it. A plug-in whose allocator
keeps the Python stack of each live block supplies :class:`MemoryHistory`. Its snapshots have
one layout: ``{"segments": [...]}`` (or that list), each segment a ``device`` and its
``blocks``, each block ``address``, ``size``, ``state`` (``"active_allocated"`` when live) and
``frames``, innermost first, each ``{"filename", "line", "name"}``.
"""

from __future__ import annotations

from typing import Any, Protocol


class MemoryHistory(Protocol):
    """One framework's allocation-history recorder. Only ``ready`` and ``enabled`` are called
    before the framework is imported and its device initialised; the others may raise."""

    label: str  # the framework as its users write it ("torch"), for the lines users read
    viewer: str  # where a saved full snapshot can be opened ("" for nowhere)

    def ready(self) -> bool:
        """The framework is imported and has initialised its device (recording may start)."""
        ...

    def unsupported(self) -> str:
        """Why this version cannot record ("" when it can), as a clause for the user."""
        ...

    def enabled(self) -> bool | None:
        """Whether the recorder is on (whoever turned it on); None when it cannot say."""
        ...

    def enable(self, max_entries: int) -> None:
        """Turn the recorder on: live blocks' stacks, and ``max_entries`` alloc/free events
        (0: none)."""
        ...

    def disable(self) -> None:
        """Turn the recorder off."""
        ...

    def snapshot(self) -> Any:
        """The live blocks with their stacks, as cheaply as the framework allows."""
        ...

    def full_snapshot(self) -> Any:
        """Everything the recorder holds (its event ring too), for a file the viewer opens."""
        ...

    def requested_bytes(self, device: int) -> tuple[int, int] | None:
        """What live allocations on ``device`` asked for, in bytes, now and at their peak since the
        peak counters were last reset. These are the units of the history's events, which carry the
        size asked for, not the size of the block that served it (None: unknown)."""
        ...

    def allocation_counts(self) -> tuple[int, ...] | None:
        """Allocations made so far, per device (None: unknown): unchanged means no new block."""
        ...

    def tag(self) -> str | None:
        """The label on allocations made now (None: this version cannot label them)."""
        ...

    def set_tag(self, text: str) -> None:
        """Label allocations made from now on with ``text`` ("" for none)."""
        ...
