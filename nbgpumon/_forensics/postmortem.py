"""The out-of-memory post-mortem printed under a cell that failed with GPU out of memory:
torch's ``OutOfMemoryError``, JAX's ``RESOURCE_EXHAUSTED`` or CuPy's ``OutOfMemoryError``.

It works from evidence only: what the message says was requested, the device's free and total
memory (NVML), each framework's allocated and reserved bytes on the device, the holders
(variables, outputs, stored tracebacks) and other processes on the device. The fixes are ranked
by the bytes each would give back: a framework's idle cache (torch's reserved-but-unused blocks,
JAX's preallocated pool, CuPy's pool), then the generic ones. What a framework's messages say
and its fixes are its plug-in's (``Framework.oom``). Nothing here keeps a reference to the
exception or its frames once it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._foundation.units import format_bytes
from .._sources.frameworks import Framework, framework, frameworks
from .._sources.frameworks.out_of_memory import OutOfMemory
from . import holder_scan

if TYPE_CHECKING:
    from .._ledger.records import CellRecord
    from .._sources.base import AllocatorStats
    from .._sources.devices.protocol import GpuProcess
    from .holder_scan import HolderScan

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
    processes: tuple[GpuProcess, ...]
    framework: str = ""  # the plug-in that ran out ("torch"); "": the first registered
    # the flight recorder (allocation tracing on): live blocks by cell line, biggest first
    largest: tuple[str, ...] = ()
    snapshot_line: str = ""  # where torch's memory snapshot was saved, or why none was
    device_label: str = ""  # the device source its figures come from, as users write it


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


def fixes(facts: OomFacts) -> list[str]:
    """What to try, most bytes back first; the generic advice last."""
    ranked: list[tuple[int, str]] = []
    holders = facts.holders.holders if facts.holders else ()
    variables = [h for h in holders if not h.hidden]
    hidden = [h for h in holders if h.hidden]
    if variables:
        names = sorted({h.name.split(" (", 1)[0] for h in variables[:3]})
        size = sum(h.bytes for h in variables[:3])
        them = "them" if len(names) > 1 else "it"
        ranked.append(
            (size, f"del {', '.join(names)} ({format_bytes(size)}) if you no longer need {them}")
        )
    if hidden:
        size = sum(h.bytes for h in hidden)
        what = ", ".join(dict.fromkeys(_hidden_kind(h.name) for h in hidden))
        ranked.append((size, f"%gpumon free: drops {what} ({format_bytes(size)})"))
    for name, stats in facts.allocators.items():
        idle = stats.reserved - stats.allocated
        if idle >= FRAGMENTED:
            ranked.append((idle, _idle_cache_fix(name, idle, name != facts.framework)))
    others = [p for p in facts.processes if not p.is_this_kernel and p.used_memory]
    if others:
        size = sum(p.used_memory or 0 for p in others)
        who = ", ".join(_process_name(p) for p in others[:3])
        ranked.append((size, f"other processes hold {format_bytes(size)} on this GPU: {who}"))
    ranked.sort(key=lambda r: -r[0])
    return [text for _, text in ranked] + [_oom_of(facts.framework).general_fix]


def _idle_cache_fix(name: str, idle: int, other: bool) -> str:
    """What gives back ``idle`` bytes that framework ``name`` holds but does not use."""
    text = _oom_of(name).idle_fix
    return text.format(
        size=format_bytes(idle), other=" (another framework's cache)" if other else ""
    )


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


def _label(name: str) -> str:
    plugin = framework(name)
    return plugin.label if plugin is not None else name


def _hidden_kind(name: str) -> str:
    if name.startswith("Out["):
        return "outputs (Out, _N)"
    if name.startswith("traceback"):
        return "the stored traceback"
    if name.startswith("_"):
        return "_, __, ___"
    return "the last result"


def _process_name(p: GpuProcess) -> str:
    pid = "PID ?" if p.pid is None else f"PID {p.pid}"
    return f"{pid} {p.name} {format_bytes(p.used_memory)}"


def report(facts: OomFacts) -> str:
    """The post-mortem, as lines of plain text."""
    where = "" if facts.cuda_index is None else f" on cuda:{facts.cuda_index}"
    if facts.device_name:
        where += f" ({facts.device_name})"
    asked = "" if facts.requested is None else f": asked for {format_bytes(facts.requested)}"
    who = _label(facts.framework or _first())
    lines = [f"nbgpumon: out of GPU memory ({who}) in {facts.cell}{asked}{where}"]
    if facts.device_total:
        lines.append(
            f"  device: {format_bytes(facts.device_free)} free of "
            f"{format_bytes(facts.device_total)} ({facts.device_label})"
        )
    for name, stats in facts.allocators.items():
        lines.append(
            f"  this kernel, {_label(name)}: {format_bytes(stats.allocated)} in use, "
            f"{format_bytes(stats.reserved)} reserved "
            f"({format_bytes(stats.reserved - stats.allocated)} reserved but unused)"
        )
    scan = facts.holders
    if scan is not None and scan.holders:
        top = " · ".join(f"{h.name} {format_bytes(h.bytes)}" for h in scan.holders[:5])
        lines.append(f"  held by: {top}")
        if scan.partial:
            lines.append(f"  ({scan.partial})")
    elif scan is not None:
        lines.append("  held by: no tensor found in variables, outputs or tracebacks")
    for p in facts.processes:
        mark = " (this kernel)" if p.is_this_kernel else ""
        lines.append(f"  process: {_process_name(p)}{mark}")
    if facts.largest:
        lines.append("  largest live blocks by the cell and line that allocated them:")
        lines += [f"    {line}" for line in facts.largest]
    if facts.snapshot_line:
        lines.append(f"  {facts.snapshot_line}")
    lines.append("  what to try, most memory back first:")
    lines += [f"    {n}. {text}" for n, text in enumerate(fixes(facts), 1)]
    return "\n".join(lines)


def gather(mon: Any, shell: Any, record: CellRecord, error: BaseException) -> OomFacts:
    """The evidence for ``error``'s post-mortem, read now from the session ``mon`` (the
    failing frames are still held by ``shell``'s stored traceback, so the holder scan names
    them)."""
    text = str(error).strip()
    requested, cuda = parse_message(text)
    devices = mon.device_source.devices
    device = next((d for d in devices if cuda is not None and d.cuda_index == cuda), None)
    if device is None and cuda is None and len(devices) == 1:
        device = devices[0]  # one GPU: the message's device is that one
        cuda = device.cuda_index
    free = total = None
    if device is not None:
        used = mon.device_ask.memory_used() or []  # (None: the device is not answering)
        now = used[device.index] if device.index < len(used) else None
        total = device.memory_total
        free = None if now is None or not total else total - now
    allocators = {
        name: by_device[cuda]
        for name, by_device in mon.ledger.read_allocators().items()
        if cuda is not None and cuda in by_device
    }
    where = "cuda" if cuda is None else f"cuda:{cuda}"
    scan = holder_scan.scan(shell, where if mon.gpu_framework_active() else "host")
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
        processes=tuple(mon.processes_on(where)),
        framework=failing_framework(error),
        device_label=mon.device_source.label,
    )
