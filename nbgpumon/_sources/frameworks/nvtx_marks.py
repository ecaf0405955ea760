"""What a framework plug-in that can mark NVTX ranges gives ``%gpumon nvtx on``.

The ranges' bookkeeping (names, each thread's depth, what nbgpumon pushed) is the session's
(``_session/controls/nvtx_ranges.py``); a plug-in supplies only the calls, made through the
framework so that a tool attached to it (Nsight Systems) sees them, and only once its device is
up.
"""

from __future__ import annotations

from typing import Protocol


class NvtxMarks(Protocol):
    """One framework's NVTX push and pop."""

    label: str  # the framework as its users write it ("torch"), for the lines users read

    def unsupported(self) -> str:
        """Why this build of the framework, when imported, has no NVTX ("" when it has, or
        when it is not imported)."""
        ...

    def ready(self) -> bool:
        """The framework is imported and has initialised its device: ranges may be pushed."""
        ...

    def push(self, name: str) -> None:
        """Open a range named ``name`` on this thread (only when ready); may raise."""
        ...

    def pop(self) -> None:
        """Close this thread's innermost range; may raise."""
        ...
