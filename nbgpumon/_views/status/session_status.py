"""A session's status in words, from its facts (``SessionData.status()``). It words the widget's
status bar and the static picture's line (:func:`status_line`), ``%gpumon status``
(:func:`status_lines`) and the processes in the snapshot (:func:`process_lines`). A live session and
a recording say it the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.gpu_names import cuda_label, hidden_gpus
from ..._foundation.metrics import metric
from ..._foundation.wording import counted, format_bytes
from ..._session.device_open import OPEN_WAIT
from ..words.processes import process_who
from ..words.traced import tracing_state_words
from .cell_path import cell_path_line
from .damage import damage_line
from .nvtx import nvtx_state_words
from .recorder import recorder_line
from .sampler_cost import cost_line

if TYPE_CHECKING:
    from ..._session.device_open import LateStart
    from ..._session.facts.status import (
        DeviceSourceFacts,
        ExporterFacts,
        FrameworkFacts,
        GpuFacts,
        LiveStatus,
        RecordedStatus,
        SamplerFacts,
        Status,
    )


def status_line(status: Status) -> str:
    """One line: the sampler's state and interval, and what is missing."""
    if status.recorded is not None:
        return _recorded_line(status.recorded)
    live = status.live
    if live is None:
        return status.state
    devices = live.devices
    sampling = "sampling" if status.state == "sampling" else "stopped"
    parts = [f"{sampling} every {status.interval:g} s"]
    silent = not_answering(devices)
    if silent:
        parts.append(silent)
    if not devices.gpus:
        parts.append(f"no GPU: {devices.status}")
    elif devices.status != "ok":
        parts.append(devices.status)
    for g in devices.gpus:
        if g.device.mig is not None:
            parts.append(f"MIG device {g.device.key} ({g.device.mig.profile or 'profile unknown'})")
    # the chart still draws their device figures: say why no allocator line is there
    hidden = hidden_gpus(g.device.index for g in devices.gpus if g.device.cuda_index is None)
    if hidden:
        parts.append(hidden)
    if devices.unavailable:
        keys = {g.device.index: g.device.key for g in devices.gpus}
        parts.append(
            "unavailable: "
            + ", ".join(f"{keys.get(d, f'gpu{d}')} {m}" for d, m, _ in devices.unavailable)
        )
    for f in live.frameworks:
        state = _framework_state(f)
        if f.listed_before_import or state != "not imported":
            parts.append(f"{f.label}: {state}")
    if live.sampler.error:
        parts.append(f"error: {live.sampler.error}")
    return " · ".join(parts)


def status_lines(status: Status) -> list[str]:
    """What ``%gpumon status`` prints: what is running, what is measured, and what is unavailable
    and why."""
    if status.recorded is not None:
        return _recorded_lines(status.recorded)
    live = status.live
    if live is None:
        return [status.state]
    lines = _live_lines(status.state, live)
    shown = process_lines(status)
    if shown:
        lines += ["processes on the GPUs (the driver's list):", *(f"  {p}" for p in shown)]
    return lines


def process_lines(status: Status) -> list[str]:
    """The processes on the GPUs now, one line each."""
    lines = []
    for p in status.processes:
        who = process_who(p)
        pid = "PID unknown" if p.pid is None else f"PID {p.pid}"
        lines.append(f"{p.key}: {pid} {who}: {format_bytes(p.used_memory)}")
    return lines


def not_answering(devices: DeviceSourceFacts) -> str:
    """ "NVML has not answered for 3.2 s" while the driver keeps a read waiting, else ""."""
    if devices.started_late is not None:
        return started_late_line(devices.started_late)
    silent = devices.silent_for
    return (
        f"{devices.label} has not answered for {silent:.1f} s (figures unavailable)"
        if silent
        else ""
    )


def not_started_line(label: str) -> str:
    """Why a device source whose start did not answer by the load's wait reads nothing: its
    status from then on."""
    return (
        f"{label} is not answering: not started {OPEN_WAIT:g} s after loading; %gpumon status "
        "says when it answers"
    )


def started_late_line(late: LateStart) -> str:
    """How a device source still starting after the load's wait went: still starting, or
    answered (with the GPUs a new session would watch)."""
    if not late.answered:
        return f"{late.label} has not answered for {late.seconds:.1f} s (still starting)"
    if not late.available:
        return f"{late.label} answered after {late.seconds:.1f} s: {late.status}"
    return (
        f"{late.label} answered after {late.seconds:.1f} s, with "
        f"{counted(late.gpus, 'GPU')}: %reload_ext nbgpumon watches them"
    )


def _live_lines(state: str, live: LiveStatus) -> list[str]:
    s, devices = live.sampler, live.devices
    running = "running" if state == "sampling" else state
    fast = (
        f"memory and utilization every {s.interval:g} s"
        if s.interval >= s.steady_period
        else f"memory every {s.interval:g} s, utilization and RSS every {s.steady_period:g} s"
    )
    lines = [
        f"sampler: {running}, {fast} ({', '.join(_cadences(s, devices))}), "
        f"{counted(s.ticks, 'tick')}, last tick {s.last_tick_seconds * 1e6:.0f} µs",
        _idle_line(s),
        cost_line(s.cost),
        cell_path_line(live.cell_path),
    ]
    if s.error:
        lines.append(f"sampler error: {s.error}")
    silent = not_answering(devices)
    if silent:
        lines.append(silent)
    if devices.available:
        binding = f", binding {devices.binding_version or '?'}" if devices.tells_library else ""
        lines.append(
            f"{devices.label}: driver {devices.driver_version or '?'}{binding}, "
            f"{counted(len(devices.gpus), 'GPU')}"
        )
    else:
        lines.append(f"{devices.label}: unavailable: {devices.status}")
    for g in devices.gpus:
        d = g.device
        lost = " (LOST)" if g.lost else ""
        lines.append(
            f"  {d.key}: {d.name}, {d.uuid}, {cuda_label(d.cuda_index)}, "
            f"{format_bytes(d.memory_total)}{lost}"
        )
        lines += _mig_lines(g, _figures(devices, devices.detail))
        lines += [
            f"    {name}: unavailable ({why})"
            for dev, name, why in devices.unavailable
            if dev == d.index
        ]
    if devices.mapping_note:
        lines.append(f"  note: {devices.mapping_note}")
    lines += [f"  note: {note}" for note in devices.notes]
    lines.append("allocators (each framework's own view of this kernel's GPU memory):")
    lines += [f"  {f.label}: {_framework_state(f, detail=True)}" for f in live.frameworks]
    traced = f" ({', '.join(live.traced_by)})" if live.traced_by else ""
    lines.append(f"allocation tracing {tracing_state_words(live.tracing)}{traced}")
    lines.append(f"NVTX cell ranges {nvtx_state_words(live.nvtx)}")
    lines.append(
        f"host: {live.host}; per-cell host peak "
        f"{'exact (VmHWM)' if live.host_peak_exact else 'sampled'}"
    )
    if live.peak_mode == "reset":  # what it does to the counters a framework's users read
        means = "".join(f"; {m}" for m in live.reset_means)
        lines.append(
            f"peaks: reset per cell (exact){means}; %config GPUMon.peak_mode = 'preserve' "
            "keeps it global"
        )
    else:
        means = "".join(f"{m}; " for m in live.preserve_means)
        lines.append(
            f"peaks: preserve ({means}a cell's peak is exact only when it sets a new high)"
        )
    recording = recorder_line(live.recording) if live.recording is not None else ""
    lines.append(f"recording: {recording or 'off (%gpumon record PATH starts one)'}")
    if live.exporter is not None:
        lines.append(f"exporter: {exporter_line(live.exporter)}")
    lines.append(
        f"summary after each cell: {'on' if live.summary else 'off'}; "
        f"{counted(live.records, 'record')} in the ledger"
    )
    return lines


def _idle_line(s: SamplerFacts) -> str:
    """How often it reads while nothing moves, and whether that is now."""
    if not s.idle_interval:
        return "while idle: at the same interval (GPUMon.idle_interval = 0)"
    if s.idle_interval <= s.interval:
        return "while idle: at the same interval (GPUMon.idle_interval is not longer)"
    return (
        f"while idle: every {s.idle_interval:g} s (no cell running, no child process, GPU "
        f"memory, utilization and RSS unchanged), {s.quiet_share:.0%} of the time so far"
    )


def _cadences(s: SamplerFacts, devices: DeviceSourceFacts) -> list[str]:
    """What is read how often beside the fast figures: the device source's own metrics by
    their registry labels ("power/temperature every 1 s"), and its process lists if any."""
    said = [f"allocator every {s.allocator_interval:g} s"]
    if devices.detail:
        said.append(f"{_figures(devices, devices.detail)} every {s.detail_interval:g} s")
    slow = [_figures(devices, devices.slow)] if devices.slow else []
    if devices.lists_processes:
        slow.append("processes")
    if slow:
        said.append(f"{'/'.join(slow)} every {s.slow_interval:g} s")
    if devices.lists_processes:  # (a child's figures come from the lists)
        said.append(f"this kernel's children every {s.process_interval:g} s")
    return said


def _figures(devices: DeviceSourceFacts, names: tuple[str, ...]) -> str:
    """The device source's metrics ``names`` as their legends say them: "power/temperature"."""
    return "/".join(metric(devices.source, name).label for name in names)


def _mig_lines(g: GpuFacts, whole_gpu: str) -> list[str]:
    """Under a GPU in MIG mode: where the kernel's MIG device is, and the GPU's others (the
    GPU's name is in the MIG device's, once: not said again)."""
    if not g.mig_mode:
        return []
    d, lines = g.device, []
    if d.mig is not None:
        m = d.mig
        lines.append(
            f"    MIG device: GPU instance {m.gpu_instance}, compute instance "
            f"{m.compute_instance}, profile {m.profile or 'unknown'}, on gpu{d.index} "
            f"({m.gpu_uuid}); its memory is the instance's"
            + (f", {whole_gpu} the whole GPU's" if whole_gpu else "")
        )
    others = [  # as nvitop lists a GPU's MIG devices: each with its memory in use now
        f"{o.key} {o.name} ({o.uuid}, "
        + (f"{format_bytes(o.used)} used" if o.used_read else "used unavailable")
        + f" of {format_bytes(o.memory_total)})"
        for o in g.other_migs
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


def _framework_state(f: FrameworkFacts, detail: bool = False) -> str:
    """ "not imported", "imported, … (not read)", or "active on cuda:0" (with its figures)."""
    if f.active is None:  # not active: its status says why
        return "not imported" if f.status.endswith("not imported") else f.status
    if not detail:
        return (
            "active on " + ", ".join(f"cuda:{a.cuda_index}" for a in f.active)
            if f.active
            else "active"
        )
    devices = [
        f"cuda:{a.cuda_index} {format_bytes(a.allocated)} in use, "
        f"{format_bytes(a.reserved)} reserved"
        + (f" (limit {format_bytes(a.limit)})" if a.limit else "")
        for a in f.active
    ]
    return f"active: {'; '.join(devices) or 'no device read'}; {f.peak_note}"


def _recorded_line(r: RecordedStatus) -> str:
    line = f"recorded: {r.source}, {counted(r.samples, 'sample')}"
    if r.buckets:
        line += f", and {counted(r.buckets, 'bucket')} of the older ones"
    if r.damage is not None:
        line += f" · {damage_line(r.damage)}"
    return line


def _recorded_lines(r: RecordedStatus) -> list[str]:
    lines = [_recorded_line(r), f"host: {r.host or '?'}; driver {r.driver or '?'}"]
    return lines + [f"  gpu{d.index}: {d.name}" for d in r.devices]


def exporter_line(exporter: ExporterFacts) -> str:
    """Where the exporter serves and what it served, in one line:
    ``http://127.0.0.1:9476/metrics, 3 scrapes served``."""
    text = f"{exporter.url}, {counted(exporter.scrapes, 'scrape')} served"
    if exporter.failed_requests:
        text += f", {counted(exporter.failed_requests, 'failed request')}"
    if exporter.last_error:
        text += f"; last scrape failed: {exporter.last_error}"
    return text
