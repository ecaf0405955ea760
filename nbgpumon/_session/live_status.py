"""A live session's :class:`~.facts.status.Status`, read from its sampler and sources at one
instant. Views say from it what is running and what is unavailable without reaching into them (the
words: ``_views/status/session_status.py``)."""

from __future__ import annotations

import threading
import time
from typing import Any

from .._foundation.gpu_names import gpu_key
from .._foundation.metrics import metrics_of
from .._sources.base import DETAIL, SLOW, STEADY_PERIOD, AllocatorSource, AllocatorStats
from .._sources.devices import device_source
from .._sources.frameworks import facts_of, frameworks
from .._sources.processes.on_gpu import ProcessOnGpu
from .facts.devices import Device
from .facts.status import (
    AllocatorOnDevice,
    DeviceSourceFacts,
    FrameworkFacts,
    GpuFacts,
    LiveStatus,
    OtherMig,
    ProcessFacts,
    SamplerFacts,
    Status,
)

Session = Any  # the live Session (session.py imports this module: no import back)
Reads = dict[str, dict[int, AllocatorStats]]  # Ledger.read_allocators(): the active ones


def live_status(mon: Session) -> Status:
    """The status of ``mon`` now."""
    state = "sampling" if mon.sampler.running else ("closed" if mon.closed else "stopped")
    cfg = mon.config
    devices: tuple[Device, ...] = mon.data.devices
    plugins = frameworks()
    live = LiveStatus(
        sampler=_sampler(mon),
        devices=_device_source(mon, devices),
        frameworks=_frameworks(mon),
        tracing=mon.tracing,
        traced_by=tuple(f.traced_as for f in plugins if f.traced_as),
        nvtx=mon.nvtx_ranges.state,
        host=mon.host.status,
        host_peak_exact=bool(mon.host.can_reset_peak),
        peak_mode=cfg.peak_mode,
        reset_means=tuple(f.reset_means for f in plugins if f.reset_means),
        preserve_means=tuple(f.preserve_means for f in plugins if f.preserve_means),
        recording=mon.recording,
        exporter=mon.exporter_facts_of(),
        summary=bool(cfg.summary),
        records=mon.ledger.record_count(),
        cell_path=mon.cells_pipeline.clock.report(),
    )
    return Status(state, cfg.interval, live=live, processes=_processes(mon, devices))


def _sampler(mon: Session) -> SamplerFacts:
    s, cfg = mon.sampler, mon.config
    return SamplerFacts(
        interval=cfg.interval,
        steady_period=STEADY_PERIOD,
        allocator_interval=cfg.allocator_interval,
        detail_interval=cfg.detail_interval,
        slow_interval=cfg.slow_interval,
        process_interval=cfg.process_interval,
        ticks=s.ticks,
        last_tick_seconds=s.last_tick_seconds,
        cost=s.cost_report(),
        error=s.error or "",
        idle_interval=cfg.idle_interval,
        quiet_share=s.quiet.quiet_share(time.monotonic()) if s.quiet is not None else 0.0,
    )


def _device_source(mon: Session, devices: tuple[Device, ...]) -> DeviceSourceFacts:
    source, told, mapping = mon.device_source, mon.diagnostics, mon.cuda_mapping  # (roles)
    facts = source.facts() if source.available else None
    lost = facts.lost_devices if facts is not None else frozenset()
    stopped = sorted(told.disabled_reads().items()) if told is not None else []
    return DeviceSourceFacts(
        label=source.label,
        status=source.status,
        available=facts is not None,
        driver_version=facts.driver_version if facts is not None else None,
        binding_version=told.binding_version if told is not None else None,
        gpus=tuple(_gpu(mon, d, d.index in lost) for d in devices),
        unavailable=tuple((dev, name, why) for (dev, name), why in stopped),
        mapping_note=mapping.mapping_note if mapping is not None else "",
        notes=tuple(told.notes()) if told is not None else (),
        started_late=mon.devices_started_late(),
        silent_for=mon.device_ask.silent_for() or 0.0,
        source=source.name,
        detail=_read_at(source.name, DETAIL),
        slow=_read_at(source.name, SLOW),
        lists_processes=mon.device_ask.lister is not None,
        tells_library=told is not None,
    )


def _read_at(source: str, cadence: str) -> tuple[str, ...]:
    """The metrics of the device source ``source`` its plug-in reads at ``cadence``."""
    plugin = device_source(source)
    cadences = plugin.cadences if plugin is not None else {}
    return tuple(m.name for m in metrics_of(source) if cadences.get(m.name) == cadence)


def _gpu(mon: Session, d: Device, lost: bool) -> GpuFacts:
    """A device, with its GPU's other MIG devices when the GPU is in MIG mode."""
    mig = mon.device_ask.mig  # (None: a source that knows no MIG)
    all_migs = mig.mig_devices if mig is not None else []
    migs = all_migs[d.index] if d.index < len(all_migs) else None
    if migs is None:
        return GpuFacts(d, lost, mig_mode=False)
    mine = [m for m in migs if m.uuid != d.uuid]
    # asked from the main thread only (%gpumon status): the sampler's thread builds a status
    # for the chart's line, which shows none of this, and must not wait on the ask's worker
    asked = mine and threading.current_thread() is threading.main_thread()
    used = mon.device_ask.mig_used(mine) if asked else None  # None: unknown
    others = tuple(  # as nvitop lists a GPU's MIG devices: each with its memory in use now
        OtherMig(
            key=gpu_key(d.index, m.gpu_instance),
            name=m.profile or m.name,
            uuid=m.uuid,
            memory_total=m.memory_total,
            used=used[i] if used is not None else None,
            used_read=used is not None,
        )
        for i, m in enumerate(mine)
    )
    return GpuFacts(d, lost, mig_mode=True, other_migs=others)


def _frameworks(mon: Session) -> tuple[FrameworkFacts, ...]:
    reads = mon.ledger.read_allocators()  # once, for every framework
    return tuple(_framework(mon, source, reads) for source in mon.allocators)


def _framework(mon: Session, source: AllocatorSource, reads: Reads) -> FrameworkFacts:
    stats = reads.get(source.name)
    facts = facts_of(source.name)
    active = (
        None
        if stats is None
        else tuple(
            AllocatorOnDevice(i, s.allocated, s.reserved, s.limit) for i, s in sorted(stats.items())
        )
    )
    return FrameworkFacts(
        name=source.name,
        label=source.label,
        listed_before_import=facts.listed_before_import,
        status=source.status,
        active=active,
        peak_note=facts.peak_note(source, mon.config.peak_mode) if active is not None else "",
    )


def _processes(mon: Session, devices: tuple[Device, ...]) -> tuple[ProcessFacts, ...]:
    keys = {d.index: d.key for d in devices}  # a MIG device's: its instance's
    return tuple(_process_facts(p, keys) for p in mon.children.processes_now())


def _process_facts(p: ProcessOnGpu, keys: dict[int, str]) -> ProcessFacts:
    return ProcessFacts(
        keys.get(p.index, f"gpu{p.index}"), p.pid, p.name, p.is_this_kernel, p.used_memory,
        p.is_child, p.started_by, p.rank, p.job, p.other_user, p.kernel,
    )  # fmt: skip
