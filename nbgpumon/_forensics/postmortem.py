"""The facts of the out-of-memory post-mortem printed under a cell that failed with GPU out of
memory: torch's ``OutOfMemoryError``, JAX's ``RESOURCE_EXHAUSTED`` or CuPy's ``OutOfMemoryError``.
Its sentences are ``_views/memory/oom.py``'s.

It works from evidence only: what the message says was requested, the device's free and total
memory (NVML), each framework's allocated and reserved bytes on the device, the holders
(variables, outputs, stored tracebacks) and other processes on the device. The fixes are ranked
by the bytes each would give back: a framework's idle cache (torch's reserved-but-unused blocks,
JAX's preallocated pool, CuPy's pool), then the generic ones. What a framework's messages say
and its fixes are its plug-in's (``Framework.oom``). Nothing here keeps a reference to the
exception or its frames once it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._sources.frameworks import Framework, framework, frameworks
from .._sources.frameworks.out_of_memory import OutOfMemory
from . import holder_scan

if TYPE_CHECKING:
    from .._ledger.records import CellRecord
    from .._sources.base import AllocatorStats
    from .._sources.devices.protocol import GpuDevice
    from .._sources.processes.on_gpu import ProcessOnGpu
    from .holder_scan import HolderScan
    from .oom_snapshot import FlightRecord
    from .tracing import TracedAllocation

_UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_UNIT.update({"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12})
FRAGMENTED = 2**30  # reserved-but-unused bytes worth a fix of their own


@dataclass(frozen=True)
class OomFacts:
    """What is known about one out-of-memory error."""

    cell: str  # "[12]"
    message: str  # the error's first line
    requested: int | None  # bytes asked for, from the framework's message
    cuda_index: int | None
    device_name: str
    device_free: int | None  # the device source's
    device_total: int | None
    allocators: dict[str, AllocatorStats]  # framework -> its counters on the device
    holders: HolderScan | None
    processes: tuple[ProcessOnGpu, ...]  # who is on the device, named
    framework: str = ""  # the plug-in that ran out ("torch"); "": the first registered
    # the flight recorder (allocation tracing on): live blocks by cell line, biggest first
    largest: tuple[TracedAllocation, ...] = ()
    snapshot: FlightRecord | None = None  # torch's memory snapshot, saved or why not
    device_label: str = ""  # the device source its figures come from, as users write it
    # the plug-ins' own words for the frameworks named here (filled in from the registry)
    words: PluginWords | None = None

    def __post_init__(self) -> None:
        if self.words is None:
            names = {self.framework or _first(), *self.allocators}
            object.__setattr__(self, "words", plugin_words(names, self.framework))


@dataclass(frozen=True)
class PluginWords:
    """What the framework plug-ins say in a post-mortem: their labels, and their fixes."""

    who: str  # the label of the framework that ran out ("PyTorch")
    labels: Mapping[str, str]  # framework name -> its label
    idle_fixes: Mapping[str, str]  # framework name -> Framework.oom.idle_fix ({size}, {other})
    general_fix: str  # the last fix offered: the failing framework's


def plugin_words(names: set[str], failing: str) -> PluginWords:
    """The registry's words for the frameworks ``names``; ``failing``: the one that ran out."""
    labels = {}
    for name in names:
        plugin = framework(name)
        labels[name] = plugin.label if plugin is not None else name
    return PluginWords(
        who=labels.get(failing or _first(), failing or _first()),
        labels=labels,
        idle_fixes={name: _oom_of(name).idle_fix for name in names},
        general_fix=_oom_of(failing).general_fix,
    )


def parse_message(message: str) -> tuple[int | None, int | None]:
    """(requested bytes, CUDA device index) from a framework's out-of-memory message (each
    plug-in's patterns in turn); None where absent."""
    requested = index = None
    for plugin in _oom_plugins():
        for pattern in plugin.oom.requested:  # type: ignore[union-attr]
            if requested is None and (m := pattern.search(message)):
                number, *unit = m.groups()
                if unit:
                    requested = int(float(number) * _UNIT[unit[0]])
                else:
                    requested = int(number.replace(",", ""))
        for pattern in plugin.oom.device:  # type: ignore[union-attr]
            if index is None and (m := pattern.search(message)):
                index = int(m.group(1))
    return requested, index


def _oom_plugins() -> list[Framework]:
    return [f for f in frameworks() if f.oom is not None]


def _oom_of(name: str) -> OutOfMemory:
    """The out-of-memory facts of plug-in ``name``, else of the first that has them."""
    plugin = framework(name)
    if plugin is not None and plugin.oom is not None:
        return plugin.oom
    known = _oom_plugins()
    return known[0].oom if known else OutOfMemory()  # type: ignore[return-value]


def failing_framework(error: BaseException) -> str:
    """Which framework raised ``error``: from its type's module, else from a plug-in's wording
    (JAX's ``RESOURCE_EXHAUSTED``), else the first registered plug-in."""
    module = type(error).__module__ or ""
    plugins = _oom_plugins()
    for plugin in plugins:
        name = plugin.module
        if module == name or module.startswith((f"{name}.", f"{name}lib", f"{name}_")):
            return plugin.name
    text = str(error)
    for plugin in plugins:
        if plugin.oom.wording and plugin.oom.wording in text:  # type: ignore[union-attr]
            return plugin.name
    return _first()


def _first() -> str:
    """The plug-in an error no plug-in claims is put on: the first registered."""
    plugins = _oom_plugins()
    return plugins[0].name if plugins else ""


class Evidence(Protocol):
    """What a post-mortem reads of the session, now (the session's MemoryControl)."""

    @property
    def device_label(self) -> str: ...
    @property
    def gpus(self) -> Sequence[GpuDevice]: ...
    def memory_used(self) -> list[int | None] | None: ...
    def allocator_reads(self) -> dict[str, dict[int, AllocatorStats]]: ...
    def gpu_framework_active(self) -> bool: ...
    def processes_on(self, device: str) -> list[ProcessOnGpu]: ...


def gather(evidence: Evidence, shell: Any, record: CellRecord, error: BaseException) -> OomFacts:
    """The evidence for ``error``'s post-mortem, read now (the failing frames are still held
    by ``shell``'s stored traceback, so the holder scan names them)."""
    text = str(error).strip()
    requested, cuda = parse_message(text)
    devices = evidence.gpus
    device = next((d for d in devices if cuda is not None and d.cuda_index == cuda), None)
    if device is None and cuda is None and len(devices) == 1:
        device = devices[0]  # one GPU: the message's device is that one
        cuda = device.cuda_index
    free = total = None
    if device is not None:
        used = evidence.memory_used() or []  # (None: the device is not answering)
        now = used[device.index] if device.index < len(used) else None
        total = device.memory_total
        free = None if now is None or not total else total - now
    allocators = {
        name: by_device[cuda]
        for name, by_device in evidence.allocator_reads().items()
        if cuda is not None and cuda in by_device
    }
    where = "cuda" if cuda is None else f"cuda:{cuda}"
    scan = holder_scan.scan(shell, where if evidence.gpu_framework_active() else "host")
    return OomFacts(
        cell=record.name,
        message=text.splitlines()[0] if text else type(error).__name__,
        requested=requested,
        cuda_index=cuda,
        device_name=device.name if device is not None else "",
        device_free=free,
        device_total=total,
        allocators=allocators,
        holders=scan,
        processes=tuple(evidence.processes_on(where)),
        framework=failing_framework(error),
        device_label=evidence.device_label,
    )
