"""The processes cells started, as Prometheus families: each child's peak GPU memory and mean
SM utilization per GPU, and whether it still runs.

A child's figures are those its cell's record holds (``CellRecord.children``): brought up to
date at each cell's end and whenever a view reads the cells, never from the scrape's thread
(the ledger is the main thread's). A child of the cell running now appears once that cell
ends; the GPU's ``children_gpu_memory_bytes`` has their sum at every sample meanwhile.

Every child is a series of its own (a label per PID and command), so their number is bounded:
the children still running, then those of the newest :data:`CELLS` cells, newest first, at
most :data:`MAX_CHILDREN` in all. Commands are user data: prometheus_client escapes label
values (backslash, double quote, newline), and a command is cut to :data:`COMMAND_CHARS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric

from .._foundation.clipping import clipped
from .._foundation.metrics import EXPORT_PREFIX
from .._ledger.records import CellRecord
from .._sources.processes.children import ChildUsage

CELLS = 64  # the newest cells whose children are exported (a running child: whichever cell)
MAX_CHILDREN = 256  # children exported at most, so at most this many series per family
COMMAND_CHARS = 200  # a command label's length at most ("…" ends a longer one)

CHILD_LABELS = ("pid", "command", "cell", "rank")

PEAK_HELP = (
    "Peak GPU memory of a process a cell started, on one GPU: the driver's accounting where "
    'exact="true", else the highest figure sampled (a lower bound), bytes'
)
UTIL_HELP = (
    "Mean SM utilization of a process a cell started, on one GPU, from the driver's "
    "per-process samples, 0 to 1"
)
RUNNING_HELP = "1 while a process a cell started runs, 0 once it ended (as its cell's record says)"


def exported_children(records: Sequence[CellRecord]) -> list[tuple[CellRecord, ChildUsage]]:
    """The children to export with their cells: every running one, then those of the newest
    CELLS cells, newest cell first; at most MAX_CHILDREN."""
    running: list[tuple[CellRecord, ChildUsage]] = []
    recent: list[tuple[CellRecord, ChildUsage]] = []
    cells = 0
    for record in reversed(records):
        if record.kind != "cell":
            continue
        cells += 1
        for child in record.children:
            if child.running:
                running.append((record, child))
            elif cells <= CELLS:
                recent.append((record, child))
    return (running + recent)[:MAX_CHILDREN]


def child_families(
    records: Sequence[CellRecord],
    host: str,
    gpu_names: tuple[str, ...],
    gpu_labels: Callable[[int], list[str]],
) -> list[Metric]:
    """The child families of ``records``; ``gpu_labels(index)``: a GPU's values for
    ``gpu_names`` (the exporter's, DCGM's), by the device source's index."""
    names = (*gpu_names, *CHILD_LABELS)
    peak = GaugeMetricFamily(
        EXPORT_PREFIX + "child_gpu_memory_peak_bytes", PEAK_HELP, labels=(*names, "exact")
    )
    util = GaugeMetricFamily(EXPORT_PREFIX + "child_gpu_utilization_ratio", UTIL_HELP, labels=names)
    running = GaugeMetricFamily(
        EXPORT_PREFIX + "child_running", RUNNING_HELP, labels=("Hostname", *CHILD_LABELS)
    )
    # two children with one label set (a PID reused within one cell): the first, newest, only
    seen: set[tuple[str, ...]] = set()
    for record, child in exported_children(records):
        labels = _child_labels(record, child)
        if tuple(labels) in seen:
            continue
        seen.add(tuple(labels))
        running.add_metric([host, *labels], 1.0 if child.running else 0.0)
        for gpu in child.gpus:
            on = [*gpu_labels(gpu.index), *labels]
            peak.add_metric([*on, "true" if gpu.exact else "false"], float(gpu.peak))
            if gpu.util_mean is not None:
                util.add_metric(on, gpu.util_mean / 100.0)
    return [f for f in (peak, util, running) if f.samples]


def _child_labels(record: CellRecord, child: ChildUsage) -> list[str]:
    # (no newline or tab in a label: one line)
    command = clipped(" ".join(child.command.split()), COMMAND_CHARS)
    count = record.execution_count
    rank = child.rank
    return [
        str(child.pid),
        command,
        "" if count is None else str(count),
        "" if rank is None else str(rank),
    ]
