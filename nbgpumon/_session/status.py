"""A live session's :class:`~.data.Status`: read from its sampler and sources at one instant,
so that views say what is running and what is unavailable without reaching into them."""

from __future__ import annotations

import threading
from typing import Any

from .._foundation.gpu_names import cuda_label, gpu_key, hidden_gpus
from .._foundation.units import format_bytes
from .._sources.base import STEADY_PERIOD, AllocatorSource, AllocatorStats
from .._sources.frameworks import facts_of, frameworks
from .data import Status

Session = Any  # the live Session (session.py imports this module: no import back)
Reads = dict[str, dict[int, AllocatorStats]]  # Ledger.read_allocators(): the active ones


def live_status(mon: Session) -> Status:
    """The status of ``mon`` now."""
    state = "sampling" if mon.sampler.running else ("closed" if mon.closed else "stopped")
    reads = mon.ledger.read_allocators()  # once, for the line and the lines
    return Status(
        state=state,
        interval=mon.config.interval,
        line=_line(mon, state, reads),
        lines=tuple(status_lines(mon, reads)),
        processes=tuple(_processes(mon)),
    )


def not_answering(mon: Session) -> str:
    """ "NVML has not answered for 3.2 s" while the driver keeps a read waiting (what the
    sampler's thread or an ask is in), else ""."""
    late = mon.devices_started_late()
    if late:
        return late
    silent = mon.device_ask.silent_for()
    label = mon.device_source.label
    return f"{label} has not answered for {silent:.1f} s (figures unavailable)" if silent else ""


def _line(mon: Session, state: str, reads: Reads) -> str:
    """One line for the widget: sampler state, interval, and what is missing."""
    parts = [f"{'sampling' if state == 'sampling' else 'stopped'} every {mon.config.interval:g} s"]
    silent = not_answering(mon)
    if silent:
        parts.append(silent)
    if not mon.has_gpu:
        parts.append(f"no GPU: {mon.device_source.status}")
    elif mon.device_source.status != "ok":
        parts.append(mon.device_source.status)
    for d in mon.device_source.devices:
        if d.mig is not None:
            parts.append(f"MIG device {_key(d)} ({d.mig.profile or 'profile unknown'})")
    hidden = hidden_gpus(d.index for d in mon.device_source.devices if d.cuda_index is None)
    if hidden:  # the chart still draws their device figures: say why no allocator line is there
        parts.append(hidden)
    disabled = mon.device_source.disabled_reads()
    if disabled:
        keys = {d.index: _key(d) for d in mon.device_source.devices}
        parts.append(
            "unavailable: "
            + ", ".join(f"{keys.get(d, f'gpu{d}')} {m}" for d, m in sorted(disabled))
        )
    for source in mon.allocators:
        state = _framework_state(mon, source, reads)
        if facts_of(source.name).listed_before_import or state != "not imported":
            parts.append(f"{source.label}: {state}")
    if mon.sampler.error:
        parts.append(f"error: {mon.sampler.error}")
    return " · ".join(parts)


def _key(device: Any) -> str:
    """``gpu0``, or ``gpu0-mig1`` for the kernel's MIG device of GPU 0."""
    return gpu_key(device.index, device.mig.gpu_instance if device.mig else None)


def _mig_lines(mon: Session, d: Any) -> list[str]:
    """Under a GPU in MIG mode: where the kernel's MIG device is, and the GPU's others (the
    GPU's name is in the MIG device's, once: not said again)."""
    all_migs = mon.device_source.mig_devices
    migs = all_migs[d.index] if d.index < len(all_migs) else None
    if migs is None:
        return []
    lines = []
    if d.mig is not None:
        m = d.mig
        lines.append(
            f"    MIG device: GPU instance {m.gpu_instance}, compute instance "
            f"{m.compute_instance}, profile {m.profile or 'unknown'}, on gpu{d.index} "
            f"({m.gpu_uuid}); its memory is the instance's, power, temperature, clock and "
            "PCIe the whole GPU's"
        )
    mine = [m for m in migs if m.uuid != d.uuid]
    # asked from the main thread only (%gpumon status): the sampler's thread builds a status
    # for the chart's line, which shows none of this, and must not wait on the ask's worker
    asked = mine and threading.current_thread() is threading.main_thread()
    used = mon.device_ask.mig_used(mine) if asked else (None if mine else [])  # None: unknown
    others = [  # as nvitop lists a GPU's MIG devices: each with its memory in use now
        f"{gpu_key(d.index, m.gpu_instance)} {m.profile or m.name} ({m.uuid}, "
        + (f"{format_bytes(used[i])} used" if used is not None else "used unavailable")
        + f" of {format_bytes(m.memory_total)})"
        for i, m in enumerate(mine)
    ]
    if d.mig is None:
        lines.append(
            "    MIG mode on: "
            + (", ".join(others) if others else "no MIG device made")
            + "; none is this kernel's (the figures above are the whole GPU's)"
        )
    elif others:
        lines.append(f"    other MIG devices of gpu{d.index}: {', '.join(others)}")
    return lines


def _processes(mon: Session) -> list[str]:
    lines = []
    keys = {d.index: _key(d) for d in mon.device_source.devices}  # a MIG device's: its instance's
    for proc in mon.device_source.processes:
        who = "this kernel" if proc.is_this_kernel else proc.name
        pid = "PID unknown" if proc.pid is None else f"PID {proc.pid}"
        key = keys.get(proc.index, f"gpu{proc.index}")
        lines.append(f"{key}: {pid} {who}: {format_bytes(proc.used_memory)}")
    return lines


def status_lines(mon: Session, reads: Reads | None = None) -> list[str]:
    """What is running, what is measured, and what is unavailable and why (``reads``: the
    allocators as just read, else read now)."""
    if reads is None:
        reads = mon.ledger.read_allocators()
    s, devices, cfg = mon.sampler, mon.device_source, mon.config
    state = "running" if s.running else ("closed" if mon.closed else "stopped")
    fast = (
        f"memory and utilization every {cfg.interval:g} s"
        if cfg.interval >= STEADY_PERIOD
        else f"memory every {cfg.interval:g} s, utilization and RSS every {STEADY_PERIOD:g} s"
    )
    lines = [
        f"sampler: {state}, {fast} (allocator "
        f"every {cfg.allocator_interval:g} s, power/temperature/clock/PCIe every "
        f"{cfg.detail_interval:g} s, processes every {cfg.slow_interval:g} s), "
        f"{s.ticks} ticks, last tick {s.last_tick_seconds * 1e6:.0f} µs",
    ]
    lines.append(s.cost_report().line())
    if s.error:
        lines.append(f"sampler error: {s.error}")
    silent = not_answering(mon)
    if silent:
        lines.append(silent)
    facts = devices.facts() if devices.available else None
    if facts is not None:
        lines.append(
            f"{devices.label}: driver {facts.driver_version or '?'}, binding "
            f"{devices.binding_version or '?'}, {len(devices.devices)} GPU(s)"
        )
    else:
        lines.append(f"{devices.label}: unavailable: {devices.status}")
    disabled = devices.disabled_reads()
    for d in devices.devices:
        cuda = cuda_label(d.cuda_index)
        lost = " (LOST)" if facts is not None and d.index in facts.lost_devices else ""
        lines.append(
            f"  {_key(d)}: {d.name}, {d.uuid}, {cuda}, {format_bytes(d.memory_total)}{lost}"
        )
        lines += _mig_lines(mon, d)
        for (dev, name), why in sorted(disabled.items()):
            if dev == d.index:
                lines.append(f"    {name}: unavailable ({why})")
    if mon.device_source.mapping_note:
        lines.append(f"  note: {mon.device_source.mapping_note}")
    for note in mon.device_source.notes():
        lines.append(f"  note: {note}")
    lines.append("allocators (each framework's own view of this kernel's GPU memory):")
    for source in mon.allocators:
        lines.append(f"  {source.label}: {_framework_state(mon, source, reads, detail=True)}")
    traced = [f.traced_as for f in frameworks() if f.traced_as]
    lines.append(
        f"allocation tracing {mon.tracing}" + (f" ({', '.join(traced)})" if traced else "")
    )
    lines.append(f"NVTX cell ranges {mon.nvtx_ranges.state}")
    lines.append(
        f"host: {mon.host.status}; per-cell host peak "
        f"{'exact (VmHWM)' if mon.host.can_reset_peak else 'sampled'}"
    )
    if cfg.peak_mode == "reset":  # what it does to the counters a framework's users read
        means = "".join(f"; {f.reset_means}" for f in frameworks() if f.reset_means)
        lines.append(
            f"peaks: reset per cell (exact){means}; %config GPUMon.peak_mode = 'preserve' "
            "keeps it global"
        )
    else:
        means = "".join(f"{f.preserve_means}; " for f in frameworks() if f.preserve_means)
        lines.append(
            f"peaks: preserve ({means}a cell's peak is exact only when it sets a new high)"
        )
    lines.append(f"recording: {mon.recording or 'off (%gpumon record PATH starts one)'}")
    if mon.exporter_line:
        lines.append(f"exporter: {mon.exporter_line}")
    lines.append(
        f"summary after each cell: {'on' if cfg.summary else 'off'}; "
        f"{len(mon.ledger.records())} records in the ledger"
    )
    return lines


def _framework_state(
    mon: Session, source: AllocatorSource, reads: Reads, detail: bool = False
) -> str:
    """ "not imported", "imported, … (not read)", or "active on cuda:0" (with its figures)."""
    stats = reads.get(source.name)
    if stats is None:  # not active: its status says why
        status = source.status
        return "not imported" if status.endswith("not imported") else status
    if not detail:
        return "active on " + ", ".join(f"cuda:{i}" for i in sorted(stats)) if stats else "active"
    devices = [
        f"cuda:{i} {format_bytes(s.allocated)} in use, {format_bytes(s.reserved)} reserved"
        + (f" (limit {format_bytes(s.limit)})" if s.limit else "")
        for i, s in sorted(stats.items())
    ]
    peaks = facts_of(source.name).peak_note(source, mon.config.peak_mode)
    return f"active: {'; '.join(devices) or 'no device read'}; {peaks}"
