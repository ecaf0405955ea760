"""``%%gpumon profile`` runs one cell under the profiler of a framework plug-in that has one
(torch's: ``frameworks/torch/profiler.py``). The result is data, drawn by
``_views/report/profile.py``.
"""

from __future__ import annotations

import sys
from typing import Any

from ..._foundation.errors import UsageError
from ..._sources.frameworks import frameworks
from ..._sources.frameworks.cell_profiler import ProfiledCell


def profile_cell(shell: Any, source: str, top: int = 15) -> ProfiledCell:
    """Run ``source`` in ``shell`` under a framework's profiler; its top ``top`` operators.

    The cell runs through ``shell.run_cell``, so it sees the user's namespace and IPython's
    transforms, and its output and errors show as usual; after an error the result covers
    what ran before it. Operators are sorted by the CUDA memory they allocated themselves
    (bytes), or by CPU memory when the cell allocated no CUDA memory. CUDA kernel activity is
    profiled only when CUDA was initialised before the cell: profiling never initialises it.
    Nothing of the profiler is kept once this returns.
    """
    if top < 1:
        raise UsageError(f"top must be a positive whole number, not {top!r}")
    able = [f for f in frameworks() if f.profiler is not None]
    imported = [f for f in able if f.module in sys.modules]
    if not able:
        raise UsageError("profiling a cell needs a framework plug-in with a profiler")
    profiler = (imported or able)[0].profiler
    return profiler.profile(  # type: ignore[union-attr]
        lambda: bool(getattr(shell.run_cell(source), "success", True)), top
    )
