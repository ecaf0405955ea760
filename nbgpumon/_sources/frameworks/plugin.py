"""What a framework plug-in is, and the list of those registered.

A **framework plug-in** is everything nbgpumon knows about one framework (torch, JAX, CuPy), in
one package under ``_sources/frameworks/``: its metrics and label (registered in the metric
registry), its allocator source, and the facts the layers above ask it for. Nothing outside a
plug-in names a framework: the ledger, status, headroom, forensics and the views go through
:func:`frameworks`, and the browser gets the list with the chart's columns (their ``group``).
A plug-in never imports its framework: it reads ``sys.modules`` once the user has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base import AllocatorSource
from .advice import PoolAdvice, PrecisionAdvice
from .cell_profiler import CellProfiler
from .holder_walk import HolderKinds
from .memory_history import MemoryHistory
from .nvtx_marks import NvtxMarks
from .out_of_memory import OutOfMemory


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework's plug-in."""

    name: str  # the registry's source name ("torch"): its columns are gpu{i}.{name}.{metric}
    label: str  # how its users write it: "torch", "JAX", "CuPy"
    module: str  # the top-level module whose presence in sys.modules says the user imported it
    # its allocator source for a session; the argument: how many devices NVML lists
    new_allocator: Callable[[int], AllocatorSource]

    # forensics (and analysis): what the holder scan, tracing, NVTX, the post-mortem, the
    # profiler and the advisor ask it; each optional
    # its arrays and containers for one holder walk, given the walk's device; None: not imported
    holder_kinds: Callable[[str], HolderKinds | None] | None = None
    memory_history: MemoryHistory | None = None  # its allocation-history recorder, if any
    nvtx: NvtxMarks | None = None  # its NVTX push and pop, if any
    oom: OutOfMemory | None = None  # what its out-of-memory errors say, and their fixes
    profiler: CellProfiler | None = None  # runs a cell under its operator profiler, if any
    pool_advice: tuple[PoolAdvice, ...] = ()  # the advisor's hints about its pool
    precision_advice: PrecisionAdvice | None = None  # and about models in full precision


_plugins: dict[str, Framework] = {}


def register_framework(plugin: Framework) -> Framework:
    """Add ``plugin`` to the frameworks every new session reads; registering the same one again
    (a reload) is a no-op, another under a taken name a ValueError."""
    known = _plugins.get(plugin.name)
    if known is not None and known != plugin:
        raise ValueError(f"a framework plug-in named {plugin.name!r} is registered already")
    _plugins[plugin.name] = plugin
    return plugin


def frameworks() -> tuple[Framework, ...]:
    """The registered plug-ins, in registration order (the built-ins first)."""
    return tuple(_plugins.values())


def framework(name: str) -> Framework | None:
    """The plug-in registered as ``name``; None for none."""
    return _plugins.get(name)
