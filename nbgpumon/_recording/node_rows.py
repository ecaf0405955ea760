"""Other nodes' samples in a recording: the ``node_samples`` and ``nodes`` tables.

``node_samples`` holds one row per remote GPU per answer of the Prometheus server (session,
time, host, gpu, then one REAL column per cluster metric of the registry, named after it);
``nodes`` holds what the labels said of each GPU, and the server it came from. Both exist in
every recording made since nbgpumon read clusters, empty for a session that read none; a file
without them (older) loads with no cluster. docs/recording.md documents them.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

from .._foundation.metrics import metric_of, node_of, registry
from .._foundation.windows import Chunk
from .._sampling.node_timeline import NodeTimeline
from .._sources.base import NodeReading
from .salvage import rows_until_damage
from .schema import run_script

NODE_METRICS = tuple(m.name for m in registry() if m.scope == "node")
GPU_FIELDS = ("model", "uuid", "pod", "namespace", "origin", "mig_profile")


def create_node_tables(db: sqlite3.Connection) -> None:
    """The two tables (idempotent), with a column for every cluster metric; in the caller's
    transaction, if it opened one."""
    run_script(
        db,
        """
        CREATE TABLE IF NOT EXISTS node_samples (session INTEGER, time REAL, host TEXT, gpu TEXT);
        CREATE INDEX IF NOT EXISTS node_samples_time ON node_samples (session, time);
        CREATE TABLE IF NOT EXISTS nodes (
            session INTEGER, host TEXT, gpu TEXT, model TEXT, uuid TEXT, pod TEXT,
            namespace TEXT, origin TEXT, mig_profile TEXT, server TEXT,
            PRIMARY KEY (session, host, gpu));
        """,
    )
    have = {r[1] for r in db.execute("PRAGMA table_info(node_samples)")}
    for name in NODE_METRICS:
        if name not in have:
            db.execute(f'ALTER TABLE node_samples ADD COLUMN "{name}" REAL')


def write_node_samples(
    db: sqlite3.Connection, session: int, columns: Sequence[str], chunk: Chunk
) -> int:
    """The cluster timeline's rows of ``chunk`` (its ``columns``) as node_samples rows; the
    number of rows written."""
    by_gpu: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, column in enumerate(columns):
        key, m = node_of(column), metric_of(column)
        if key is not None and m is not None and m.name in NODE_METRICS:
            by_gpu.setdefault(key, []).append((i, NODE_METRICS.index(m.name)))
    names = ", ".join(f'"{n}"' for n in NODE_METRICS)
    placeholders = ", ".join("?" * (4 + len(NODE_METRICS)))
    rows = []
    for t, values in zip(chunk.times.tolist(), chunk.values.tolist(), strict=True):
        for (host, gpu), picks in by_gpu.items():
            row: list[float | None] = [None] * len(NODE_METRICS)
            for i, at in picks:
                v = values[i]
                row[at] = None if math.isnan(v) else v
            if any(v is not None for v in row):  # a GPU that was not in this answer: no row
                rows.append((session, t, host, gpu, *row))
    db.executemany(
        f"INSERT INTO node_samples (session, time, host, gpu, {names}) VALUES ({placeholders})",
        rows,
    )
    return len(rows)


def write_nodes(
    db: sqlite3.Connection, session: int, gpus: dict[tuple[str, str], dict[str, str]], server: str
) -> None:
    """Each GPU's labels (replacing what an earlier flush wrote of it)."""
    db.executemany(
        "INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (session, host, gpu, *(labels.get(f, "") for f in GPU_FIELDS), server)
            for (host, gpu), labels in gpus.items()
        ],
    )


def read_nodes(db: sqlite3.Connection, session: int) -> tuple[NodeTimeline | None, str, str]:
    """(the session's cluster timeline, the server it came from, the error that stopped the
    read); no timeline when the session read no cluster (or the file predates clusters)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"node_samples", "nodes"} <= tables:
        return None, "", ""
    gpu_rows, error = rows_until_damage(
        db, f"SELECT host, gpu, {', '.join(GPU_FIELDS)}, server FROM nodes WHERE session = ?",
        (session,),
    )  # fmt: skip
    have = {r[1] for r in db.execute("PRAGMA table_info(node_samples)")}
    names = [n for n in NODE_METRICS if n in have]
    sample_rows, samples_error = rows_until_damage(
        db,
        "SELECT time, host, gpu" + "".join(f', "{n}"' for n in names)
        + " FROM node_samples WHERE session = ?",
        (session,),
    )  # fmt: skip
    error = error or samples_error
    if not gpu_rows and not sample_rows:
        return None, "", error
    gpus, server = {}, ""
    for host, gpu, *fields, source in gpu_rows:
        gpus[(str(host), str(gpu))] = {
            f: str(v) for f, v in zip(GPU_FIELDS, fields, strict=True) if v
        }
        server = server or str(source or "")
    readings: dict[float, dict[str, float]] = {}
    for t, host, gpu, *values in sample_rows:
        try:
            at = float(t)
        except (TypeError, ValueError):
            error = error or "a node sample's time holds text"
            continue
        row = readings.setdefault(at, {})
        for name, v in zip(names, values, strict=True):
            if isinstance(v, (int, float)):
                row[f"node:{host}.{gpu}.{name}"] = float(v)
    timeline = NodeTimeline()
    for t in sorted(readings):
        present = {node_of(c) for c in readings[t]}
        timeline.add(NodeReading(t, readings[t], {k: gpus.get(k, {}) for k in present if k}))
    return timeline, server, error
