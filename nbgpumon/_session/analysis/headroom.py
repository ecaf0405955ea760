"""How many more bytes each kind of memory could take now: the default limit of ``fit``.

A framework's allocator can use the device's free memory (NVML) and its own idle cache
(reserved but not allocated: torch frees it and retries before it gives up), up to any cap it
was given: torch's ``set_per_process_memory_fraction`` (on what it reserves), JAX's pool limit,
CuPy's pool limit. Host memory is the kernel's MemAvailable. Each figure is relative to what is
allocated now, as a step's peak growth is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..._foundation.wording import format_bytes
from ..._sources.frameworks import facts_of

if TYPE_CHECKING:
    from ..session import Session


@dataclass(frozen=True, slots=True)
class Headroom:
    """Bytes one kind of memory could still grow by (None: unknown), and how that was found."""

    bytes: int | None
    note: str  # "free 41.3 GiB + cache 0.2 GiB"


def headroom(session: Session, framework: str | None, cuda: int | None) -> Headroom:
    """For ``framework``'s allocator on CUDA device ``cuda``, or for host memory (None)."""
    if framework is None:
        available = session.host.system()[1]
        if available is None:
            return Headroom(None, "host memory unreadable")
        return Headroom(available, f"available {format_bytes(available)}")
    source = next((a for a in session.allocators if a.name == framework), None)
    stats = source.read(cuda) if source is not None and cuda is not None else None
    device = next((d for d in session.device_source.devices if d.cuda_index == cuda), None)
    free = None
    if device is not None:
        everywhere = session.device_ask.free() or []  # (None: the device is not answering)
        free = everywhere[device.index] if device.index < len(everywhere) else None
    if stats is None or free is None:
        return Headroom(
            None, f"{framework} on cuda:{cuda} or {session.device_source.label} unreadable now"
        )
    idle = max(0, stats.reserved - stats.allocated)
    room = free + idle
    note = f"free {format_bytes(free)} + cache {format_bytes(idle)}"
    plugin = facts_of(framework)  # its cap, and what the cap is called
    cap = plugin.memory_cap(source, stats, cuda)  # type: ignore[arg-type]
    if cap is not None and cap - stats.allocated < room:
        room = max(0, cap - stats.allocated)
        note = f"{plugin.cap_name} {format_bytes(cap)} - allocated {format_bytes(stats.allocated)}"
    return Headroom(room, note)
