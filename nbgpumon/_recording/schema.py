"""The recording's tables, their version and the marker that says a file is a recording.

docs/recording.md documents every table and column; a test holds the two together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

SCHEMA_VERSION = 1
# SQLite's header field for "which program's file is this" (PRAGMA application_id): "nbgm".
APPLICATION_ID = int.from_bytes(b"nbgm", "big")
FORMAT_KEY, FORMAT_VALUE = "format", "nbgpumon"  # the same, in the meta table, for any client
CELL_COLUMNS = (
    "idx", "kind", "execution_count", "cell_id", "label", "start", "duration", "status",
    "error", "allocated_total", "retained", "peak_allocated", "util_mean", "util_max",
    "rss_before", "rss_after", "rss_peak", "held_by", "traced",
)  # fmt: skip

# The tables of schema version 1 as nbgpumon 0.1.0 wrote them, before the marker existed: how a
# file without the marker is still recognised as a recording. Frozen: a later schema version
# changes create_schema, never this. samples has one more REAL column per metric.
UNMARKED_LAYOUT: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "session": ("id", "started", "host", "pid", "gpus", "driver", "versions", "columns"),
    "samples": ("session", "time", "device"),
    "cells": ("session", *CELL_COLUMNS, "record"),
    "marks": ("session", "time", "label"),
}


def create_schema(db: sqlite3.Connection, metrics: Sequence[str]) -> None:
    """Create the tables (idempotent) and set the marker; a sample metric the table lacks is
    added as a column. Only for a file that is new or already a recording."""
    db.executescript(
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
        CREATE TABLE IF NOT EXISTS marks (session INTEGER, time REAL, label TEXT);
        """
    )
    have = {r[1] for r in db.execute("PRAGMA table_info(samples)")}
    for metric in metrics:
        if metric not in have:
            db.execute(f'ALTER TABLE samples ADD COLUMN "{metric}" REAL')
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), (FORMAT_KEY, FORMAT_VALUE)],
    )
