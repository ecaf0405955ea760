"""Time to build the report of a day's recording at 10 Hz (target <= 1 s for the widget).

A synthetic recording of one GPU (8 columns: NVML's memory, utilization and power, torch's
allocator, the host's RSS), 864,000 samples 0.1 s apart, and 1,440 cells, one a minute: what
``%gpumon report`` draws after a day's training. Timed: ``report_widget`` (``%gpumon report``'s
widget: the lines downsampled for the figures, the newest cells' bars) and ``report_html``
(``python -m nbgpumon report``'s page), each a few times after one small warm-up build that
pays the imports. No GPU needed; the numbers are the CPU's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import result_file
import stats

from nbgpumon._api.recorded import Recorded
from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._views.report.bqplot_report import report_widget

TARGET_S = 1.0
GIB, MIB = 2**30, 2**20
T0 = 1_700_000_000.0  # a fixed unix time
COLUMNS = [
    "gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util",
    "gpu0.nvml.power", "gpu0.torch.allocated", "gpu0.torch.reserved", "host.rss",
]  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hours", type=float, default=24.0, help="hours recorded at 10 Hz")
    parser.add_argument("--repeats", type=int, default=5, help="builds timed, of each")


def cell(n: int) -> CellRecord:
    """Cell ``n``: 30 s of training a minute, 1 GiB peak, nothing kept."""
    device = DeviceUsage(
        index=0, cuda_index=0, name="Fake H200",
        allocated_before=GIB, allocated_after=GIB, reserved_before=2 * GIB,
        reserved_after=2 * GIB, device_used_before=3 * GIB, device_used_after=3 * GIB,
        peak_allocated=GIB, peak_exact=True, allocated_total=GIB, util_mean=50.0, util_max=90.0,
    )  # fmt: skip
    return CellRecord(
        index=n, kind="cell", execution_count=n, cell_id=None, label=f"step({n})",
        start=T0 + 60 * n, duration=30.0, status="ok", error="", devices=(device,),
        rss_before=GIB, rss_after=GIB, rss_peak=GIB, rss_peak_exact=True,
    )  # fmt: skip


def recording(seconds: float, cells: list[CellRecord]) -> Recorded:
    """``seconds`` of samples at 10 Hz from T0, with ``cells``."""
    n = int(seconds * 10)
    times = T0 + np.arange(n) / 10
    values = np.full((n, len(COLUMNS)), np.nan)
    col = COLUMNS.index
    values[:, col("gpu0.nvml.mem_used")] = 3 * GIB + (np.arange(n) % 100) * MIB
    values[:, col("gpu0.nvml.mem_total")] = 141 * GIB
    values[:, col("gpu0.nvml.gpu_util")] = (np.arange(n) * 7) % 101
    values[:, col("gpu0.nvml.mem_util")] = 20.0
    values[:, col("gpu0.nvml.power")] = 400.0
    values[:, col("gpu0.torch.allocated")] = GIB
    values[:, col("gpu0.torch.reserved")] = 2 * GIB
    values[:, col("host.rss")] = GIB
    return Recorded(
        path=Path("/tmp/synthetic.sqlite"), session_id=1, started=T0, host="bench",
        gpus=[{"index": 0, "name": "Fake H200", "memory_total": 141 * GIB}], driver="580",
        versions={}, columns=list(COLUMNS), times=times, values=values,
        records=list(cells), marks=[],
    )  # fmt: skip


def timed(build, repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``build()``."""
    took = []
    for _ in range(repeats):
        began = time.perf_counter()
        build()
        took.append(time.perf_counter() - began)
    return took


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("report_build", args)
    hours = 1.0 if args.quick else args.hours
    repeats = 1 if args.quick else args.repeats
    seconds = hours * 3600
    cells = [cell(n) for n in range(1, int(seconds // 60) + 1)]
    day = recording(seconds, cells)
    warm = recording(10, cells[:2])
    report_widget(warm)  # imports and first-use costs out of the timing
    warm.report_html()
    result.log(f"{len(day.times):,} samples, {len(cells):,} cells; {repeats} builds of each")
    for name, build, target in (
        ("report_widget", lambda: report_widget(day), TARGET_S),
        ("report_html", day.report_html, None),
    ):
        d = stats.describe(timed(build, repeats))
        result.details[name] = d
        result.add(
            f"{name}, {hours:g} h at 10 Hz ({len(day.times):,} samples, {len(cells):,} cells)",
            d["median"],
            "s",
            target,
            note=f"min {d['min']:.2f} s, max {d['max']:.2f} s over {d['n']} builds",
        )
    result.finish()


if __name__ == "__main__":
    main()
