"""A holder scan in words: what holds memory, biggest first, what it is (parameters,
gradients, …), then the processes on the GPU (``%gpumon holders``,
``print(nbgpumon.holders())``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.wording import counted, format_bytes
from ..words.processes import process_who
from ..words.text_view import TextView, pre_html

if TYPE_CHECKING:
    from ..._forensics.holder_scan import HolderScan
    from ..._ledger.kinds_notes import ScanCut


def holders_lines(scan: HolderScan, limit: int = 20) -> list[str]:
    """What holds memory, biggest first (the first ``limit``), by kind on each device, then the
    processes on the GPU."""
    where = "host memory" if scan.device == "host" else f"{scan.device} memory"
    lines = [
        f"nbgpumon holders of {where}: {format_bytes(scan.total)} in "
        f"{counted(len(scan.holders), 'holder')}, {counted(scan.objects, 'object')} looked at "
        f"in {scan.seconds * 1000:.0f} ms"
    ]
    if not scan.holders:
        lines.append("  no tensor or array found in variables, outputs or tracebacks")
    width = max((len(h.name) for h in scan.holders[:limit]), default=0)
    for h in scan.holders[:limit]:
        hidden = "  (hidden: %gpumon free drops it)" if h.hidden else ""
        storages = counted(h.storages, "storage")
        lines.append(f"  {h.name.ljust(width)}  {format_bytes(h.bytes):>10}  {storages}{hidden}")
    if len(scan.holders) > limit:
        rest = sum(h.bytes for h in scan.holders[limit:])
        lines.append(f"  … {len(scan.holders) - limit} more, {format_bytes(rest)}")
    for place, kinds in scan.categories.items():
        parts = " · ".join(f"{kind} {format_bytes(size)}" for kind, size in kinds.items())
        lines.append(f"  by kind, {'host memory' if place == 'host' else place}: {parts}")
    if scan.partial is not None:
        lines.append(f"  ({scan_cut_words(scan.partial)})")
    for p in scan.processes:
        who = process_who(p)
        pid = "PID ?" if p.pid is None else f"PID {p.pid}"
        lines.append(f"  process on gpu{p.index}: {pid} {who} {format_bytes(p.used_memory)}")
    return lines


def scan_cut_words(cut: ScanCut) -> str:
    """Where a walk cut short stopped: ``stopped after 50 ms (120,000 objects looked at): some
    holders may be missing``."""
    looked = counted(cut.objects, "object")
    return (
        f"stopped after {cut.budget * 1000:.0f} ms ({looked} looked at): some holders may be "
        "missing"
    )


def holders_text(scan: HolderScan) -> str:
    """:func:`holders_lines` as one text."""
    return "\n".join(holders_lines(scan))


def holders_view(scan: HolderScan) -> TextView:
    text = holders_text(scan)
    return TextView(text, pre_html(text))
