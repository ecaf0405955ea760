"""How many more bytes each kind of memory could take now: the default limit of ``fit``.

A framework's allocator can use the device's free memory (NVML) and its own idle cache
(reserved but not allocated: torch frees it and retries before it gives up), up to any cap it
was given: torch's ``set_per_process_memory_fraction`` (on what it reserves), JAX's pool limit,
CuPy's pool limit. Host memory is the kernel's MemAvailable. Each figure is relative to what is
allocated now, as a step's peak growth is. How a figure was found is a fact (``Basis``) that
the views word ("free 41.3 GiB + cache 0.2 GiB").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..._sources.frameworks import facts_of

if TYPE_CHECKING:
    from ..session import Session


@dataclass(frozen=True, slots=True)
class Basis:
    """How a limit was found: each kind below, with its figures."""


@dataclass(frozen=True, slots=True)
class Given(Basis):
    """The caller gave it (``limit=``)."""


@dataclass(frozen=True, slots=True)
class HostAvailable(Basis):
    """The host's available memory (the figure is the headroom's bytes)."""


@dataclass(frozen=True, slots=True)
class HostUnreadable(Basis):
    """The host's available memory could not be read."""


@dataclass(frozen=True, slots=True)
class DeviceUnreadable(Basis):
    """``framework``'s allocator on CUDA device ``cuda``, or the device source (by its label),
    did not answer."""

    framework: str
    cuda: int | None
    device_source: str


@dataclass(frozen=True, slots=True)
class FreeAndCache(Basis):
    """The device's free memory plus the allocator's idle cache (reserved, not allocated)."""

    free: int
    cache: int


@dataclass(frozen=True, slots=True)
class UnderCap(Basis):
    """The allocator's cap (``cap_name``: what the framework calls it) less what it has
    allocated, below its free memory and cache."""

    cap_name: str
    cap: int
    allocated: int


@dataclass(frozen=True, slots=True)
class Headroom:
    """Bytes one kind of memory could still grow by (None: unknown), and how that was found."""

    bytes: int | None
    basis: Basis


def headroom(session: Session, framework: str | None, cuda: int | None) -> Headroom:
    """For ``framework``'s allocator on CUDA device ``cuda``, or for host memory (None)."""
    if framework is None:
        available = session.host.system()[1]
        if available is None:
            return Headroom(None, HostUnreadable())
        return Headroom(available, HostAvailable())
    source = next((a for a in session.allocators if a.name == framework), None)
    stats = source.read(cuda) if source is not None and cuda is not None else None
    device = next((d for d in session.device_source.devices if d.cuda_index == cuda), None)
    free = None
    if device is not None:
        everywhere = session.device_ask.free() or []  # (None: the device is not answering)
        free = everywhere[device.index] if device.index < len(everywhere) else None
    if stats is None or free is None:
        return Headroom(None, DeviceUnreadable(framework, cuda, session.device_source.label))
    idle = max(0, stats.reserved - stats.allocated)
    room = free + idle
    plugin = facts_of(framework)  # its cap, and what the cap is called
    cap = plugin.memory_cap(source, stats, cuda)  # type: ignore[arg-type]
    if cap is not None and cap - stats.allocated < room:
        return Headroom(
            max(0, cap - stats.allocated), UnderCap(plugin.cap_name, cap, stats.allocated)
        )
    return Headroom(room, FreeAndCache(free, idle))
