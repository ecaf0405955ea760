"""``%gpumon nvtx on`` puts an NVTX range around each cell (``[12] first line``) and each
``track()`` region (``[12] label``), so that an Nsight Systems capture of the kernel is labelled by
cell.

Ranges go through a framework plug-in's NVTX calls (torch's ``torch.cuda.nvtx``: see
``frameworks/torch/nvtx.py``), and only once the user's code has imported the framework and
initialised CUDA: nbgpumon never imports a framework itself.
NVTX's push/pop ranges are a stack per thread, so each thread's depth is counted here and only
ranges nbgpumon pushed are ever popped: a cell during which NVTX was turned on, or which
initialised CUDA, pushed nothing and pops nothing; one during which it was turned off still
pops the range it pushed.
"""

from __future__ import annotations

import sys
import threading

from ..._foundation.errors import failure_line
from ..._ledger.outcome import first_line
from ..._sources.frameworks import frameworks
from ..._sources.frameworks.nvtx_marks import NvtxMarks
from ..facts.nvtx import ASKED_OFF, ASKED_ON, NvtxAnswer, NvtxState

NAME_CHARS = 60  # a range's name: "[N] " and the cell's first line cut to this


def range_name(execution_count: int | None, text: str) -> str:
    """A cell's range name, its count and first non-blank line cut to 60 chars:
    ``[12] x = model(batch)``."""
    count = "?" if execution_count is None else execution_count
    head = text.lstrip()[: NAME_CHARS + 1]  # (not the whole of a long cell's lines)
    return f"[{count}] {first_line(head, NAME_CHARS)}".rstrip()


def nvtx_marks() -> NvtxMarks | None:
    """The NVTX calls of the first registered plug-in that has them, preferring one whose
    framework the user imported; None when no plug-in has them."""
    able = [f for f in frameworks() if f.nvtx is not None]
    imported = [f for f in able if f.module in sys.modules]
    chosen = (imported or able)[:1]
    return chosen[0].nvtx if chosen else None


class NvtxRanges:
    """Pushes and pops nbgpumon's NVTX ranges. No method raises; a failure turns it off and
    leaves one line in ``error``, said at the end of its cell. Why :meth:`start` refused is
    said by ``start``'s own line, so it is kept apart (``refused``), for ``state`` only."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.error = ""
        self.refused = ""
        self._depth = threading.local()  # ranges nbgpumon has open on each thread

    def start(self) -> NvtxAnswer:
        """Turn ranges on (where a plug-in can mark them); what that did."""
        marks = nvtx_marks()
        if marks is None or marks.unsupported():
            self.enabled = False
            self.refused = (
                marks.unsupported() if marks else "no framework plug-in marks NVTX ranges"
            )
        else:
            self.enabled, self.error, self.refused = True, "", ""
        return NvtxAnswer(ASKED_ON, self.state, refused=self.refused)

    def stop(self) -> NvtxAnswer:
        """Turn ranges off; a range open now still ends with its cell or region."""
        was, self.enabled = self.enabled, False
        return NvtxAnswer(ASKED_OFF, self.state, was_on=was)

    @property
    def state(self) -> NvtxState:
        """On (and the framework it waits for, until that one has CUDA up) or off, and the
        last problem."""
        waiting = ""
        if self.enabled:
            marks = nvtx_marks()
            if marks is None or not marks.ready():
                waiting = marks.label if marks is not None else "a framework"
        return NvtxState(self.enabled, waiting, self.error or self.refused)

    def push(self, name: str) -> int | None:
        """Open a range named ``name`` on this thread when on and CUDA is up; the token that
        :meth:`pop_to` takes (None: nothing was pushed)."""
        if not self.enabled:
            return None
        marks = nvtx_marks()
        if marks is None or not marks.ready():
            return None
        try:
            marks.push(name)
        except Exception as exc:
            self.enabled = False
            self.error = failure_line("NVTX range_push failed; NVTX ranges off", exc)
            return None
        depth = self._now() + 1
        self._depth.n = depth
        return depth

    def pop_to(self, token: int | None) -> None:
        """Close the range that ``push`` returned ``token`` for, and any nbgpumon opened on
        this thread after it and left open; nothing when it is closed already."""
        if token is None:
            return
        depth = self._now()
        if depth < token:
            return
        marks = nvtx_marks()
        try:
            while depth >= token:
                depth -= 1
                marks.pop()  # type: ignore[union-attr]
        except Exception as exc:
            self.error = failure_line("NVTX range_pop failed", exc)
        finally:
            self._depth.n = depth

    def close(self) -> None:
        """Close every range nbgpumon has open on this thread (at unload)."""
        self.pop_to(1)
        self.enabled = False

    def _now(self) -> int:
        return getattr(self._depth, "n", 0)
