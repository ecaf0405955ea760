"""The line ``%gpumon free`` (and ``nbgpumon.free()``) says: what came back."""

from __future__ import annotations

from ..._forensics.release import Freed
from ..._foundation.wording import format_bytes


def freed_line(freed: Freed) -> str:
    """The line that says what came back:
    ``nbgpumon free: 1.0 GiB of GPU memory back (allocated -1.0 GiB, ...); cleared ...``."""
    before, after = freed.before, freed.after
    what = list(freed.cleared)
    if freed.frames:
        what.append(
            f"the stored traceback ({freed.frames} frame{'s' if freed.frames != 1 else ''})"
        )
    gpu = ""
    if before.reserved is not None and after.reserved is not None:
        gpu = (
            f"GPU: allocated {_change(before.allocated, after.allocated)}, "
            f"reserved {_change(before.reserved, after.reserved)}"
        )
    if not what:
        line = (
            "nbgpumon free: no output, _ or stored traceback held a tensor or array; "
            "nothing cleared (your variables are never touched)"
        )
        gave_back = gpu and after.reserved < before.reserved  # type: ignore[operator]
        return line + (f"; unused cache given back to the driver: {gpu}" if gave_back else "")
    parts = [gpu] if gpu else []
    parts.append(f"host: resident {_change(before.rss, after.rss)}")
    return f"nbgpumon free: cleared {', '.join(what)}; {'; '.join(parts)}"


def _change(before: int | None, after: int | None) -> str:
    if before is None or after is None:
        return "—"
    return format_bytes(after - before, signed=True)
