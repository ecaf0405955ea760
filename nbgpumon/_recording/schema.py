"""The recording's tables, their version and the marker that says a file is a recording.

docs/recording.md documents every table and column; a test holds the two together.

Schema 2 names a sample column after its registry metric, ``{source}_{metric}``
(``nvml_mem_used``, ``torch_allocated``, ``host_rss``), describes each in the ``metrics`` table,
and says in ``session.schema`` which naming a session used. Schema 1 (nbgpumon 0.1.0 and the
first recordings) named them by metric alone (``mem_used``, ``allocated``, ``rss``); its
sessions still load, their columns renamed to today's (``V1_SOURCES``).

Schema 3 keeps the newest samples whole and folds older ones into ``sample_buckets``: one row
per device per bucket, with each sample column's mean under its own name and its extremes as
``{name}_min`` / ``{name}_max`` (compaction.py). Sessions of schemas 1 and 2 have no buckets.

Schema 4 gives each cell its source: ``source`` (at most 64 KiB of it), ``source_cut`` and
``source_hash`` (of the whole source) in ``cells``. The JSON ``record`` has the hash and the cut
but not the text, which is in ``source`` alone. Cells of older sessions have neither: NULL.

Schema 5 gives each cell the processes it started: one ``children`` row per child (session,
cell ``idx``, ``pid``, ``started``: its key), with flat columns and the whole ``ChildUsage`` as
JSON in ``record``. The cell's JSON ``record`` no longer holds them. A child that outlives its
cell rewrites its own row (``INSERT OR REPLACE``), never the cell's. Older sessions have no
rows there and load with no children.

Schema 6 gives each device of a cell's JSON ``record`` its memory by kind at the cell's start
and end (``kinds_before``, ``kinds_after``: lists of [kind, bytes]) and how they were read
(``kinds_note``). No table changes; a reader older than 6 would fail on the new fields, which
is why the version says so. Older sessions load with no kinds.

Schema 7 keeps a cell's traced allocations as data: in its JSON ``record``, ``traced`` and
``traced_peak`` are lists of objects (an allocation: ``bytes``, ``blocks``, ``device``,
``cell``, ``line``, ``source``, ``caller_cell``, ``caller_line``, ``before_history``; a replay
of the peak that stopped short: ``device``, ``events``), and the flat ``traced`` column is the
JSON list of the allocations ("" for none). Each device's ``kinds_note`` is a list of objects
(``_ledger/kinds_notes.py``) and ``retention.note`` one or null. Before, all were text; older
sessions load with that text, shown as it is. A reader older than 7 would fail on the objects.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from .._foundation.metrics import metric_of
from .._ledger.records import unnamed_figures_owner

SCHEMA_VERSION = 7
BUCKETS_SINCE = 3  # the first schema version whose sessions may have sample_buckets rows
CHILDREN_SINCE = 5  # the first whose cells' children are in the children table
# SQLite's header field for "which program's file is this" (PRAGMA application_id): "nbgm".
APPLICATION_ID = int.from_bytes(b"nbgm", "big")
FORMAT_KEY, FORMAT_VALUE = "format", "nbgpumon"  # the same, in the meta table, for any client
# The cells table's flat columns of schema 1 (frozen, as UNMARKED_LAYOUT is), then schema 4's.
V1_CELL_COLUMNS = (
    "idx", "kind", "execution_count", "cell_id", "label", "start", "duration", "status",
    "error", "allocated_total", "retained", "peak_allocated", "util_mean", "util_max",
    "rss_before", "rss_after", "rss_peak", "held_by", "traced",
)  # fmt: skip
SOURCE_COLUMNS = {"source_hash": "TEXT", "source_cut": "INTEGER", "source": "TEXT"}
CELL_COLUMNS = (*V1_CELL_COLUMNS, *SOURCE_COLUMNS)
# The children table's flat columns (schema 5), after session and idx, before record.
CHILD_COLUMNS = ("pid", "command", "started", "ended", "exit_code", "peak", "exact", "rank", "job")

# The tables of schema version 1 as nbgpumon 0.1.0 wrote them, before the marker existed: how a
# file without the marker is still recognised as a recording. Frozen: a later schema version
# changes create_schema, never this. samples has one more REAL column per metric.
UNMARKED_LAYOUT: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "session": ("id", "started", "host", "pid", "gpus", "driver", "versions", "columns"),
    "samples": ("session", "time", "device"),
    "cells": ("session", *V1_CELL_COLUMNS, "record"),
    "marks": ("session", "time", "label"),
}


# Schema 1's metric names, by the source that read them: frozen, as schema 1 files are.
V1_SOURCES = {
    **dict.fromkeys(
        ("mem_used", "mem_reserved", "mem_total", "gpu_util", "mem_util", "temperature", "power",
         "power_limit", "sm_clock", "pcie_tx", "pcie_rx"),
        "nvml",
    ),
    # the one framework measured then (its plug-in says it owns such figures)
    **dict.fromkeys(("allocated", "reserved", "active", "inactive_split"), unnamed_figures_owner()),
}  # fmt: skip


def sample_column(column: str, version: int = SCHEMA_VERSION) -> tuple[str, str]:
    """The (device, samples-table column) that holds a timeline column in schema ``version``. For
    example, ``gpu0.nvml.mem_used`` is ``("gpu0", "nvml_mem_used")`` (in schema 1, ``gpu0.mem_used``
    was ``("gpu0", "mem_used")``); ``host.rss`` is ``("host", "host_rss")``."""
    device, _, rest = column.partition(".")
    if version < 2:
        return device, rest
    return device, f"{device}_{rest}" if device == "host" else rest.replace(".", "_", 1)


def today_column(v1_column: str) -> str:
    """A schema 1 timeline column under today's name: ``gpu0.mem_used`` -> ``gpu0.nvml.mem_used``;
    host columns and names schema 1 never had stay as they are."""
    device, _, name = v1_column.partition(".")
    source = V1_SOURCES.get(name)
    return f"{device}.{source}.{name}" if device.startswith("gpu") and source else v1_column


def bucket_columns(name: str) -> tuple[str, str, str]:
    """The ``sample_buckets`` columns of the samples column ``name``: mean, minimum, maximum."""
    return name, f"{name}_min", f"{name}_max"


def device_columns(
    columns: Sequence[str], version: int = SCHEMA_VERSION
) -> dict[str, tuple[list[str], list[int]]]:
    """{device: (samples-table columns, timeline column indices)}: one samples row a device."""
    out: dict[str, tuple[list[str], list[int]]] = {}
    for i, column in enumerate(columns):
        device, name = sample_column(column, version)
        names, index = out.setdefault(device, ([], []))
        names.append(name)
        index.append(i)
    return out


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute ``script``'s statements (no ``;`` inside a literal) one by one on ``db``."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def create_schema(db: sqlite3.Connection, columns: Sequence[str]) -> None:
    """Create the tables (idempotent), set the marker and the version, and make room for the
    timeline ``columns``. A sample column the table lacks is added (to ``samples`` and as its three
    ``sample_buckets`` columns), and described in ``metrics``. Only for a file that is new or
    already a recording; in the caller's transaction, if it opened one."""
    # statement by statement, not executescript (which commits first): the caller's one
    # transaction holds it all, a few pages of log instead of one commit per ALTER TABLE
    run_script(
        db,
        f"""
        PRAGMA application_id = {APPLICATION_ID};
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE IF NOT EXISTS session (
            id INTEGER PRIMARY KEY, started REAL, host TEXT, pid INTEGER, gpus TEXT,
            driver TEXT, versions TEXT, columns TEXT);
        CREATE TABLE IF NOT EXISTS samples (session INTEGER, time REAL, device TEXT);
        CREATE INDEX IF NOT EXISTS samples_time ON samples (session, time);
        CREATE TABLE IF NOT EXISTS cells (
            session INTEGER, idx INTEGER, kind TEXT, execution_count INTEGER, cell_id TEXT,
            label TEXT, start REAL, duration REAL, status TEXT, error TEXT,
            allocated_total INTEGER, retained INTEGER, peak_allocated INTEGER, util_mean REAL,
            util_max REAL, rss_before INTEGER, rss_after INTEGER, rss_peak INTEGER,
            held_by TEXT, traced TEXT, record TEXT);
        CREATE TABLE IF NOT EXISTS sample_buckets (
            session INTEGER, time REAL, seconds REAL, device TEXT, samples INTEGER);
        CREATE INDEX IF NOT EXISTS sample_buckets_device
            ON sample_buckets (session, device, time);
        CREATE TABLE IF NOT EXISTS marks (session INTEGER, time REAL, label TEXT);
        CREATE TABLE IF NOT EXISTS children (
            session INTEGER, idx INTEGER, pid INTEGER, command TEXT, started REAL, ended REAL,
            exit_code INTEGER, peak INTEGER, exact INTEGER, rank INTEGER, job TEXT, record TEXT,
            PRIMARY KEY (session, idx, pid, started));
        CREATE TABLE IF NOT EXISTS metrics (
            name TEXT PRIMARY KEY, source TEXT, metric TEXT, unit TEXT, kind TEXT, panel TEXT,
            label TEXT);
        """,
    )
    if db.execute("SELECT 1 FROM samples LIMIT 1").fetchone() is None:
        # load() reads a device's rows at a time: this index spares it a scan of every row per
        # device. Only in a file without samples yet, where it costs nothing to make; an older
        # recording keeps the time index alone (indexing its rows would stall %gpumon record).
        db.execute("CREATE INDEX IF NOT EXISTS samples_device ON samples (session, device, time)")
    if "schema" not in {r[1] for r in db.execute("PRAGMA table_info(session)")}:
        db.execute("ALTER TABLE session ADD COLUMN schema INTEGER")  # a schema 1 file: NULL
    in_cells = {r[1] for r in db.execute("PRAGMA table_info(cells)")}
    for name, kind in SOURCE_COLUMNS.items():
        # after ``record`` in a new file as in one of schema 1 to 3 (whose cells get NULL)
        if name not in in_cells:
            db.execute(f"ALTER TABLE cells ADD COLUMN {name} {kind}")
    have = {r[1] for r in db.execute("PRAGMA table_info(samples)")}
    in_buckets = {r[1] for r in db.execute("PRAGMA table_info(sample_buckets)")}
    described = []
    for column in columns:
        _, name = sample_column(column)
        if name not in have:
            db.execute(f'ALTER TABLE samples ADD COLUMN "{name}" REAL')
            have.add(name)
        for bucket_column in bucket_columns(name):
            if bucket_column not in in_buckets:
                db.execute(f'ALTER TABLE sample_buckets ADD COLUMN "{bucket_column}" REAL')
                in_buckets.add(bucket_column)
        m = metric_of(column)
        if m is not None:
            described.append((name, m.source, m.name, m.unit, m.kind, m.panel, m.label))
    db.executemany("INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)", described)
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), (FORMAT_KEY, FORMAT_VALUE)],
    )
