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
from contextlib import AbstractContextManager
from dataclasses import dataclass

from ..base import AllocatorSource, AllocatorStats
from ..plugin_list import PluginList
from .advice import PoolAdvice, PrecisionAdvice
from .cell_profiler import CellProfiler
from .holder_walk import HolderKinds
from .memory_history import MemoryHistory
from .nvtx_marks import NvtxMarks
from .out_of_memory import OutOfMemory
from .trials import Trials


@dataclass(frozen=True, slots=True)
class Setting:
    """A ``GPUMon`` setting a plug-in declares for itself (``GPUMon.cupy_peak_hook``): a boolean
    trait of that name, whose value the session passes on to the plug-in's allocator source."""

    name: str  # the trait's name, as users write it: %config GPUMon.<name> = True
    default: bool
    help: str  # what %config GPUMon says of it
    apply: Callable[[AllocatorSource, bool], None]  # the source told of a new value (main thread)


def _no_peak_note(source: AllocatorSource, peak_mode: str) -> str:
    return ""


def _no_reason(peak_mode: str) -> str:
    return ""


def _pool_limit(source: AllocatorSource, stats: AllocatorStats, cuda_index: int) -> int | None:
    return stats.limit  # the cap its allocator reports with its figures


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework's plug-in."""

    name: str  # the registry's source name ("torch"): its columns are gpu{i}.{name}.{metric}
    label: str  # how its users write it: "torch", "JAX", "CuPy"
    module: str  # the top-level module whose presence in sys.modules says the user imported it
    # its allocator source for a session; the argument: how many devices NVML lists
    new_allocator: Callable[[int], AllocatorSource]

    # the ledger's, status's and headroom's
    # status's line names it even while it is not imported ("torch: not imported")
    listed_before_import: bool = False
    # status: how exact its per-cell peaks are now, given its source and GPUMon.peak_mode
    peak_note: Callable[[AllocatorSource, str], str] = _no_peak_note
    # status's peaks line: what peak_mode "reset" and "preserve" do to its own counter ("": no
    # counter of its that peak_mode touches)
    reset_means: str = ""
    preserve_means: str = ""
    # status's tracing line: what allocation tracing records of it ("": it records nothing)
    traced_as: str = ""
    # the ledger's notice, once, the first time it resets this framework's peak counter: what
    # changes for its users' own calls ("": reset silently)
    reset_notice: str = ""
    # fit: why its peaks were sampled lower bounds, given peak_mode ("": the generic reason)
    why_sampled: Callable[[str], str] = _no_reason
    # fit: a block in which its peaks are exact (CuPy's hook armed for it); None: nothing to do
    exact_peaks: Callable[[AllocatorSource], AbstractContextManager[None]] | None = None
    # headroom: the most it may hold on a CUDA device now (None: no cap), and the cap's name
    memory_cap: Callable[[AllocatorSource, AllocatorStats, int], int | None] = _pool_limit
    cap_name: str = "its cap"
    # records: a recording from before per-framework figures holds its figures (one built-in)
    owns_unnamed_figures: bool = False
    # its own GPUMon settings (config declares them, the session passes them on)
    settings: tuple[Setting, ...] = ()
    # what its source's release_cache() gives back, as %gpumon free's help says it ("": nothing)
    cache_words: str = ""
    # what its users call what it reserves beyond its arrays ("cache", "pool"): the breakdown's
    # "torch cache (reserved, unused)"
    reserve_name: str = "pool"

    # forensics (and analysis): what the holder scan, tracing, NVTX, the post-mortem, the
    # profiler and the advisor ask it; each optional
    # its arrays and containers for one holder walk, given the walk's device; None: not imported
    holder_kinds: Callable[[str], HolderKinds | None] | None = None
    memory_history: MemoryHistory | None = None  # its allocation-history recorder, if any
    nvtx: NvtxMarks | None = None  # its NVTX push and pop, if any
    # which errors are its out-of-memory errors, what they say, and their fixes
    oom: OutOfMemory | None = None
    profiler: CellProfiler | None = None  # runs a cell under its operator profiler, if any
    pool_advice: tuple[PoolAdvice, ...] = ()  # the advisor's hints about its pool
    precision_advice: PrecisionAdvice | None = None  # and about models in full precision
    # analysis: a what-if run's model, fixes and trial state (nbgpumon.whatif), if it has them
    trials: Trials | None = None


_plugins: PluginList[Framework] = PluginList("a framework plug-in")


def register_framework(plugin: Framework) -> Framework:
    """Add ``plugin`` to the frameworks every new session reads; registering the same one again
    (a reload) is a no-op, another under a taken name a ValueError."""
    return _plugins.register(plugin)


def frameworks() -> tuple[Framework, ...]:
    """The registered plug-ins, in registration order (the built-ins first)."""
    return _plugins.all()


def framework(name: str) -> Framework | None:
    """The plug-in registered as ``name``; None for none."""
    return _plugins.get(name)


def facts_of(name: str) -> Framework:
    """The plug-in of the allocator source named ``name``; for a name no plug-in has, one that
    says nothing (every optional field at its default), so a caller need not check."""
    found = _plugins.get(name)
    return found if found is not None else Framework(name, name, name, _no_allocator)


def _no_allocator(devices: int) -> AllocatorSource:
    raise LookupError("no framework plug-in of this name is registered")


def plugin_settings() -> tuple[tuple[Framework, Setting], ...]:
    """Every registered plug-in's own settings, with their plug-in."""
    return tuple((f, s) for f in _plugins.all() for s in f.settings)
