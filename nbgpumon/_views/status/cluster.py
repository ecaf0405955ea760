"""Other nodes' GPUs as text: ``%gpumon cluster``, and the nodes in the snapshot and status."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..._foundation.metrics import metric
from ..._foundation.wording import counted, format_bytes
from ..._session.facts.session_data import (
    Cluster,
    ClusterState,
    Node,
    RemoteGpu,
    RemotePhase,
    RemoteState,
)

SHORT_LIST = 16  # nodes the snapshot and status name one line each; the rest are counted


@dataclass(frozen=True, slots=True)
class GpuNow:
    """One remote GPU's latest numbers (None: not reported)."""

    gpu: RemoteGpu
    used: float | None
    total: float | None
    util: float | None
    power: float | None
    temperature: float | None
    allocated: float | None


@dataclass(frozen=True, slots=True)
class NodeNow:
    """A node's latest numbers, its GPUs summed (memory) and averaged (utilization)."""

    node: Node
    gpus: tuple[GpuNow, ...]
    used: float | None
    total: float | None
    util_mean: float | None
    util_max: float | None


def nodes_now(cluster: Cluster) -> list[NodeNow]:
    """Each node with its GPUs' latest values, sorted by host."""
    latest = cluster.latest() or {}

    def value(gpu: RemoteGpu, name: str) -> float | None:
        v = latest.get(metric("cluster", name).node_column(gpu.host, gpu.gpu))
        return None if v is None or math.isnan(v) else v

    out = []
    for node in cluster.nodes():
        gpus = tuple(
            GpuNow(g, *(value(g, n) for n in _FIELDS)) for g in node.gpus
        )  # fmt: skip
        utils = [g.util for g in gpus if g.util is not None]
        out.append(
            NodeNow(
                node,
                gpus,
                _sum([g.used for g in gpus]),
                _sum([g.total for g in gpus]),
                sum(utils) / len(utils) if utils else None,
                max(utils) if utils else None,
            )
        )
    return out


_FIELDS = ("mem_used", "mem_total", "gpu_util", "power", "temperature", "allocated")


def _sum(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def node_line(n: NodeNow, now: float) -> str:
    """A node as one line:
    ``node-a: 2 GPUs, 41.0 GiB of 159 GiB used, utilization 44% (max 87%), 1.2 s ago``."""
    gpus = len(n.gpus)
    parts = [f"{gpus} GPU{'' if gpus == 1 else 's'}"]
    if n.used is not None:
        of = f" of {format_bytes(n.total)}" if n.total is not None else ""
        parts.append(f"{format_bytes(n.used)}{of} used")
    if n.util_mean is not None:
        parts.append(f"utilization {n.util_mean:.0f}% (max {n.util_max:.0f}%)")
    parts.append(f"{_age(now - n.node.last_seen)} ago")
    return f"{n.node.host}: " + ", ".join(parts)


def gpu_line(g: GpuNow) -> str:
    """A node's GPU as one line:
    ``gpu0 NVIDIA H100 80GB HBM3: 40.0 GiB of 79.6 GiB, 87%, 612 W, 61 °C, pod research/x``."""
    parts = []
    if g.used is not None:
        parts.append(format_bytes(g.used) + (f" of {format_bytes(g.total)}" if g.total else ""))
    if g.allocated is not None:
        parts.append(f"{format_bytes(g.allocated)} allocated (nbgpumon)")
    if g.util is not None:
        parts.append(f"{g.util:.0f}%")
    if g.power is not None:
        parts.append(f"{g.power:.0f} W")
    if g.temperature is not None:
        parts.append(f"{g.temperature:.0f} °C")
    who = g.gpu
    if who.pod:
        parts.append(f"pod {who.namespace + '/' if who.namespace else ''}{who.pod}")
    name = who.model + (f" MIG {who.mig_profile}" if who.mig_profile else "")
    return f"{who.gpu} {name or 'GPU'}: " + (", ".join(parts) or "no values")


def cluster_lines(
    cluster: Cluster | None, per_gpu: bool, limit: int | None = SHORT_LIST
) -> list[str]:
    """The cluster's status and its nodes, a line each (and a line per GPU with
    ``per_gpu``); at most ``limit`` nodes are named (None: all)."""
    if cluster is None:
        return []
    lines = [f"cluster: {cluster_status(cluster.state)}"]
    now = time.time()
    nodes = nodes_now(cluster)
    shown = nodes if limit is None else nodes[:limit]
    for n in shown:
        lines.append(f"  {node_line(n, now)}")
        if per_gpu:
            lines += [f"    {gpu_line(g)}" for g in n.gpus]
    if len(nodes) > len(shown):
        more = counted(len(nodes) - len(shown), "more node")
        lines.append(f"  … {more} (%gpumon cluster lists them all)")
    return lines


def cluster_status(state: ClusterState) -> str:
    """One line: what the server's source is doing, or why there is nothing, and the GPUs
    not kept (``2 nodes, 5 GPUs from http://prometheus:9090, every 15 s``)."""
    if state.recorded:
        return "recorded"
    if state.remote is None:
        return "not reading a cluster"
    line = remote_status(state.remote)
    if state.refused_gpus:
        line += (
            f" · {counted(state.refused_gpus, 'more GPU')} not kept (nbgpumon keeps "
            f"{state.max_gpus}; narrow with --match)"
        )
    return line


def cluster_read_line(state: ClusterState) -> str:
    """What starting or stopping to read a cluster did (``%gpumon cluster URL|off``)."""
    remote = state.remote
    if remote is None:
        return "not reading a cluster"
    if remote.phase == RemotePhase.CONNECTING:
        return f"cluster: reading {remote.url}; no answer yet (%gpumon status says when)"
    line = remote_status(remote)
    return line if remote.phase == RemotePhase.STOPPED else f"cluster: {line}"


def remote_status(r: RemoteState) -> str:
    """The Prometheus source's own line: its latest answer, or what went wrong."""
    if r.phase == RemotePhase.ANSWERED:
        return (
            f"{counted(r.nodes, 'node')}, {counted(r.gpus, 'GPU')} from {r.url}, "
            f"every {r.interval:g} s"
        )
    if r.phase == RemotePhase.NO_SERIES:
        narrowed = f" matching {r.match}" if r.match else ""
        return (
            f"Prometheus at {r.url} answers, but has no DCGM exporter or nbgpumon GPU "
            f"series{narrowed}"
        )
    if r.phase == RemotePhase.FAILED:
        return f"Prometheus at {r.url}: {r.error}; trying again every {r.interval:g} s"
    if r.phase == RemotePhase.BROKE:
        return f"Prometheus at {r.url}: {r.error}"
    if r.phase == RemotePhase.STOPPED:
        return f"stopped reading {r.url}"
    return f"connecting to {r.url}"


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
