"""The out-of-memory post-mortem printed under a cell that failed with GPU out of memory:
torch's ``OutOfMemoryError``, JAX's ``RESOURCE_EXHAUSTED`` or CuPy's ``OutOfMemoryError``.

It works from evidence only: what the message says was requested, the device's free and total
memory (NVML), each framework's allocated and reserved bytes on the device, the holders
(variables, outputs, stored tracebacks) and other processes on the device. The fixes are ranked
by the bytes each would give back: a framework's idle cache (torch's reserved-but-unused blocks,
JAX's preallocated pool, CuPy's pool), then the generic ones. Nothing here keeps a reference to
the exception or its frames once it returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._foundation.metrics import source_label
from .._foundation.units import format_bytes
from . import holder_scan

if TYPE_CHECKING:
    from .._ledger.records import CellRecord
    from .._sources.base import AllocatorStats
    from .._sources.devices.protocol import GpuProcess
    from .holder_scan import HolderScan

_UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_UNIT.update({"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12})
_REQUESTED = re.compile(r"Tried to allocate ([\d.]+) ?([KMGT]i?B|B)")  # torch
# JAX: "…while trying to allocate 4294967296 bytes"; CuPy: "…allocating 4,294,967,296 bytes"
_REQUESTED_BYTES = re.compile(r"(?:trying to allocate|allocating) ([\d,]+) bytes")
# JAX 0.11: "…while trying to allocate 4.00TiB with allocator GPU_0_bfc on device 0."
_REQUESTED_JAX = re.compile(r"trying to allocate ([\d.]+) ?([KMGT]i?B|B)\b")
_DEVICE_JAX = re.compile(r"on device (\d+)")
_DEVICE = re.compile(r"GPU (\d+)")
FRAGMENTED = 2**30  # reserved-but-unused bytes worth a fix of their own
_GENERIC = {
    "torch": "a smaller batch, mixed precision (torch.autocast) or gradient accumulation",
    "jax": "a smaller batch, bfloat16 (jnp.bfloat16), jax.checkpoint on large blocks, or "
    "gradient accumulation",
    "cupy": "smaller arrays or chunks, float32 instead of float64, or in-place operations "
    "(out=...)",
}


@dataclass(frozen=True)
class OomFacts:
    """What is known about one out-of-memory error."""

    cell: str  # "[12]"
    message: str  # the error's first line
    requested: int | None  # bytes asked for, from torch's message
    cuda_index: int | None
    device_name: str
    device_free: int | None  # the device source's
    device_total: int | None
    allocators: dict[str, AllocatorStats]  # framework -> its counters on the device
    holders: HolderScan | None
    processes: tuple[GpuProcess, ...]
    framework: str = "torch"  # the one that ran out: "torch", "jax", "cupy"
    # the flight recorder (allocation tracing on): live blocks by cell line, biggest first
    largest: tuple[str, ...] = ()
    snapshot_line: str = ""  # where torch's memory snapshot was saved, or why none was
    device_label: str = ""  # the device source its figures come from, as users write it


def parse_message(message: str) -> tuple[int | None, int | None]:
    """(requested bytes, CUDA device index) from torch's, JAX's or CuPy's out-of-memory message;
    None where absent."""
    requested = None
    if m := _REQUESTED.search(message):
        requested = int(float(m.group(1)) * _UNIT[m.group(2)])
    elif m := _REQUESTED_BYTES.search(message):
        requested = int(m.group(1).replace(",", ""))
    elif m := _REQUESTED_JAX.search(message):
        requested = int(float(m.group(1)) * _UNIT[m.group(2)])
    m = _DEVICE.search(message) or _DEVICE_JAX.search(message)
    index = int(m.group(1)) if m else None
    return requested, index


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
    return [text for _, text in ranked] + [_GENERIC.get(facts.framework, _GENERIC["torch"])]


def _idle_cache_fix(framework: str, idle: int, other: bool) -> str:
    """What gives back ``idle`` bytes that ``framework`` holds but does not use."""
    size = format_bytes(idle)
    if framework == "jax":
        return (
            f"JAX's pool holds {size} it does not use (it preallocates 75% of the GPU): "
            "restart with XLA_PYTHON_CLIENT_PREALLOCATE=false, or cap it with "
            "XLA_PYTHON_CLIENT_MEM_FRACTION=.3"
        )
    if framework == "cupy":
        return (
            f"CuPy's pool caches {size} of freed blocks: "
            "cupy.get_default_memory_pool().free_all_blocks() (or %gpumon free)"
        )
    whose = "torch (another framework's cache)" if other else "torch"
    return (
        f"{size} is reserved by {whose} but unused: torch.cuda.empty_cache() (or %gpumon "
        "free), or restart with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    )


def failing_framework(error: BaseException) -> str:
    """Which framework raised ``error``: from its type's module, else from JAX's wording."""
    module = type(error).__module__ or ""
    for name in ("cupy", "jax", "torch"):
        if module == name or module.startswith((f"{name}.", f"{name}lib", f"{name}_")):
            return name
    return "jax" if "RESOURCE_EXHAUSTED" in str(error) else "torch"


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
    who = source_label(facts.framework)
    lines = [f"nbgpumon: out of GPU memory ({who}) in {facts.cell}{asked}{where}"]
    if facts.device_total:
        lines.append(
            f"  device: {format_bytes(facts.device_free)} free of "
            f"{format_bytes(facts.device_total)} ({facts.device_label})"
        )
    for name, stats in facts.allocators.items():
        lines.append(
            f"  this kernel, {source_label(name)}: {format_bytes(stats.allocated)} in use, "
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
