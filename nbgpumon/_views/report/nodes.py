"""The report's view of other nodes: one memory and one utilization line per node, from the
cluster timeline (live or recorded), on the report's own time scale.

A node's memory line is its GPUs' used bytes summed (each downsampled row's maximum, as the
report's own memory lines are); its utilization line is its GPUs' mean. With more nodes than
``MAX_NODE_LINES``, the busiest by memory are drawn and the title says how many are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._foundation.metrics import metric_of, node_of
from ..._session.facts.session_data import Cluster

MAX_NODE_LINES = 12
MAX_POINTS = 2000


@dataclass(frozen=True)
class NodeSeries:
    """One node's lines: unix seconds, bytes used (NaN: no answer), mean utilization (%)."""

    host: str
    gpus: int
    times: np.ndarray
    used: np.ndarray
    util: np.ndarray


def node_series(cluster: Cluster | None, max_points: int = MAX_POINTS) -> list[NodeSeries]:
    """Each node's lines, busiest (highest memory) first."""
    if cluster is None or cluster.cursor == 0:
        return []
    window = cluster.window().downsample(max_points)
    by_host: dict[str, dict[str, list[int]]] = {}
    gpus: dict[str, set[str]] = {}
    for i, column in enumerate(cluster.columns):
        key, m = node_of(column), metric_of(column)
        if key is None or m is None or m.name not in ("mem_used", "gpu_util"):
            continue
        by_host.setdefault(key[0], {}).setdefault(m.name, []).append(i)
        gpus.setdefault(key[0], set()).add(key[1])
    out = []
    for host, picks in by_host.items():
        used = _combine(window.high, picks.get("mem_used", []), np.nansum)
        util = _combine(window.mean, picks.get("gpu_util", []), np.nanmean)
        out.append(NodeSeries(host, len(gpus[host]), window.times, used, util))
    out.sort(key=lambda s: (-_top(s.used), s.host))
    return out


def _combine(values: np.ndarray, columns: list[int], how) -> np.ndarray:
    """``how`` across ``columns`` per row; NaN where none of them has a value."""
    if not columns:
        return np.full(len(values), np.nan)
    block = values[:, columns].astype(np.float64)
    present = ~np.isnan(block).all(axis=1)
    out = np.full(len(values), np.nan)
    with np.errstate(invalid="ignore"):
        out[present] = how(block[present], axis=1)
    return out


def _top(values: np.ndarray) -> float:
    present = values[~np.isnan(values)]
    return float(present.max()) if len(present) else 0.0
