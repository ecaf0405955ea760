"""The bqplot report (``report_widget``) of a live monitor and of a recording, in-process."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from pathlib import Path

import numpy as np
import pytest

import nbgpumon
from nbgpumon._api.recorded import Recorded
from nbgpumon._foundation.units import byte_unit
from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._views.chart.axis import MAX_TIME_TICKS, time_ticks
from nbgpumon._views.report.bqplot_report import MAX_BAND_LABELS, MAX_POINTS, Report, report_widget

GiB = 2**30
MiB = 2**20
XSS = "<img src=x onerror=alert(1)>"
T0 = 1_700_000_000.0  # 2023-11-14, a fixed unix time
COLUMNS = [
    "gpu0.nvml.mem_used", "gpu0.nvml.mem_total", "gpu0.nvml.gpu_util", "gpu0.nvml.mem_util",
    "gpu0.nvml.power",
    "gpu0.torch.allocated", "gpu0.torch.reserved", "host.rss",
]  # fmt: skip


def gpu_cell(
    n: int, start: float, duration: float, peak: int, kept: int, label: str = ""
) -> CellRecord:
    device = DeviceUsage(
        index=0, cuda_index=0, name="Fake H200",
        allocated_before=GiB, allocated_after=GiB + kept,
        reserved_before=2 * GiB, reserved_after=2 * GiB + kept,
        device_used_before=3 * GiB, device_used_after=3 * GiB + kept,
        peak_allocated=peak, peak_exact=True, allocated_total=peak,
        util_mean=50.0, util_max=90.0,
    )  # fmt: skip
    return CellRecord(
        index=n, kind="cell", execution_count=n, cell_id=None, label=label or f"step({n})",
        start=start, duration=duration, status="ok", error="", devices=(device,),
        rss_before=GiB, rss_after=GiB, rss_peak=GiB, rss_peak_exact=True,
    )  # fmt: skip


def recording(seconds: float, cells: list[CellRecord], marks=(), hz: float = 10.0) -> Recorded:
    """One GPU of synthetic samples from T0 for ``seconds`` at ``hz``."""
    times = T0 + np.arange(int(seconds * hz)) / hz
    n = len(times)
    values = np.full((n, len(COLUMNS)), np.nan)
    col = COLUMNS.index
    values[:, col("gpu0.nvml.mem_used")] = 3 * GiB + (np.arange(n) % 100) * MiB
    values[:, col("gpu0.nvml.mem_total")] = 141 * GiB
    values[:, col("gpu0.nvml.gpu_util")] = (np.arange(n) * 7) % 101
    values[:, col("gpu0.nvml.mem_util")] = 20.0
    values[:, col("gpu0.torch.allocated")] = GiB
    values[:, col("gpu0.torch.allocated")][n // 3] = 9 * GiB  # one sample: a transient peak
    values[:, col("gpu0.torch.reserved")] = 2 * GiB
    values[:, col("host.rss")] = GiB
    return Recorded(
        path=Path("/tmp/synthetic.sqlite"), session_id=1, started=T0, host="test",
        gpus=[{"index": 0, "name": "Fake H200", "memory_total": 141 * GiB}], driver="580",
        versions={}, columns=list(COLUMNS), times=times, values=values,
        records=list(cells), marks=list(marks),
    )  # fmt: skip


def ms(t: float) -> np.datetime64:
    return np.datetime64(round(t * 1000), "ms")


def listed(report: Report) -> list[str]:
    """The cells in the brushed listing, by their data-cell attribute, in order."""
    return re.findall(r"<tr data-cell='(\d*)'", report.listing.value)


def brush(report: Report, t0: float, t1: float) -> None:
    # what the browser sends back for a DateScale brush: datetime64[ms]
    report.brushes[0].selected = np.array([ms(t0), ms(t1)])


THREE = [
    gpu_cell(1, T0 + 10, 5, peak=2 * GiB, kept=0),
    gpu_cell(2, T0 + 20, 10, peak=4 * GiB, kept=GiB),
    gpu_cell(3, T0 + 40, 2, peak=3 * GiB, kept=512 * MiB, label=f"y = 2  # {XSS}"),
]


def test_a_recording_draws_its_gpu_downsampled_with_one_band_and_one_bar_per_cell():
    report = report_widget(recording(60, THREE, marks=[(T0 + 30, "warm-up done")], hz=100))
    assert isinstance(report, Report)
    used, reserved, allocated = report.memory_lines
    assert [m.labels for m in report.memory_lines] == [
        ["used (NVML)"],
        ["reserved (torch)"],
        ["allocated (torch)"],
    ]
    for line in report.memory_lines:  # 6,000 samples down to 2,000 per line
        assert line.y.shape == line.x.shape == (MAX_POINTS,)
        assert line.x.dtype == np.dtype("datetime64[ms]")
    assert allocated.y.max() == pytest.approx(9.0)  # GiB: the one-sample peak survives
    assert used.y.max() == pytest.approx(3 + 99 / 1024) and reserved.y.max() == 2.0
    assert report.memory_axis.label == "GiB"
    assert [m.labels for m in report.util_lines] == [["GPU util"], ["memory util"]]
    for line in report.util_lines:
        assert line.y.shape == (MAX_POINTS,) and 0 <= line.y.min() <= line.y.max() <= 100
    assert report.util_figure in report.children

    bands = report.bands[0]
    assert bands.fill == "bottom"
    starts, ends = bands.x[0::3], bands.x[1::3]
    assert list(starts) == [ms(r.start) for r in THREE]
    assert list(ends) == [ms(r.start + r.duration) for r in THREE]
    # alternate colours: cell i's span is drawn (y=1) in curve i % 2 only
    assert [int(np.nanmax(bands.y[i % 2, 3 * i : 3 * i + 2])) for i in range(3)] == [1, 1, 1]
    assert np.isnan(bands.y[1, 0:2]).all() and np.isnan(bands.y[0, 3:5]).all()
    labels = report.band_labels[0]
    assert list(labels.text) == ["[1]", "[2]", "[3]"]
    assert list(labels.x) == [ms(r.start) for r in THREE]
    mark_line, mark_label = report.mark_lines[0], report.mark_labels[0]
    assert list(mark_line.x) == [ms(T0 + 30)] * 2  # a vertical line, bottom to top
    assert mark_line.y.tolist() == [0.0, 1.0]
    assert list(mark_label.text) == ["warm-up done"]
    assert report.memory_figure.marks[0] is bands  # under the data
    assert report.util_figure.marks[0] is report.bands[1]  # both timelines show the cells

    assert list(report.cell_bars.x) == ["[1]", "[2]", "[3]"]
    assert report.cell_bars.y.tolist() == [[2.0, 4.0, 3.0], [0.0, 1.0, 0.5]]  # GiB
    assert report.duration_bars.y.tolist() == [5.0, 10.0, 2.0]
    title = report.title.value
    assert "3 cells" in title and "1 GPU: gpu0 Fake H200, 141 GiB" in title
    assert "6,000 samples" in title and "(60.0 s)" in title


def test_brushing_lists_exactly_the_cells_that_overlap_the_range():
    report = report_widget(recording(60, THREE))
    brush(report, T0 + 14, T0 + 21)  # the end of [1] and the start of [2]; [3] is later
    assert listed(report) == ["1", "2"]
    assert report.cell_bars.selected.tolist() == [0, 1]
    assert report.duration_bars.selected.tolist() == [0, 1]
    assert "2 cells ran in this range" in report.listing.value

    brush(report, T0 + 16, T0 + 19)  # between [1] and [2]: nothing ran
    assert listed(report) == []
    assert "0 cells" in report.listing.value

    report.brushes[1].selected = np.array([ms(T0 + 41), ms(T0 + 100)])  # the other figure
    assert listed(report) == ["3"]
    assert report.brushes[0].selected is None  # one range at a time

    report.brushes[1].selected = None
    assert listed(report) == [] and "Drag across a timeline" in report.listing.value
    assert report.cell_bars.selected is None


def test_user_strings_are_escaped_in_the_listing():
    report = report_widget(recording(60, THREE, marks=[(T0 + 41, f"mark {XSS}")]))
    brush(report, T0 + 39, T0 + 50)
    assert listed(report) == ["3"]
    page = report.listing.value
    assert "y = 2  # &lt;img src=x onerror=alert(1)&gt;" in page
    assert "mark &lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img" not in page


def test_zooming_to_the_selection_narrows_the_time_axis_and_labels_the_cells_in_view():
    many = [gpu_cell(n, T0 + 10 * n, 5, peak=GiB, kept=0) for n in range(1, 301)]
    report = report_widget(recording(3100, many))
    labels = report.band_labels[0]
    assert 0 < len(labels.text) <= MAX_BAND_LABELS  # 300 cells: a spread of them is named
    brush(report, T0 + 1000, T0 + 1100)
    report.zoom_button.click()
    lo, hi = (
        v.replace(tzinfo=dt.timezone.utc).timestamp()
        for v in (report.time_scale.min, report.time_scale.max)
    )
    assert (lo, hi) == (pytest.approx(T0 + 1000), pytest.approx(T0 + 1100))
    # [99] ends at 995 s, out of view; [100] starts at 1000 s, [110] at 1100 s
    assert list(labels.text) == [f"[{n}]" for n in range(100, 111)]
    report.reset_button.click()
    assert report.time_scale.min is None and report.time_scale.max is None
    assert len(labels.text) <= MAX_BAND_LABELS
    report.mode.value = "panzoom"
    assert report.memory_figure.interaction is not report.brushes[0]
    report.mode.value = "brush"
    assert report.memory_figure.interaction is report.brushes[0]


def ticks_of(report: Report) -> tuple[list[float], str]:
    """Both time axes' tick values (unix seconds; they agree) and their d3 format."""
    axes = [f.axes[0] for f in (report.memory_figure, report.util_figure)]
    values = [[_ms_to_unix(v) for v in axis.tick_values] for axis in axes]
    assert values[0] == values[1] and axes[0].tick_format == axes[1].tick_format
    return values[0], axes[0].tick_format


def _ms_to_unix(value: np.datetime64) -> float:
    return float(np.datetime64(value, "ms").astype(np.int64)) / 1000.0


def test_a_20_s_report_ticks_every_5_s_rather_than_every_second():
    # d3's default for this span was a "22:13:20" label each second: 20 of them, overlapping
    report = report_widget(recording(20, [gpu_cell(1, T0 + 1, 9, GiB, 0)]))
    ticks, fmt = ticks_of(report)
    assert fmt == "%H:%M:%S"
    assert ticks == [T0 + 5 * k for k in range(4)]  # T0 is a whole multiple of 5 s
    assert len(ticks) <= MAX_TIME_TICKS


def test_a_two_hour_report_ticks_on_the_quarter_hour_in_hours_and_minutes():
    report = report_widget(recording(7200, [gpu_cell(1, T0 + 60, 600, GiB, 0)], hz=0.5))
    ticks, fmt = ticks_of(report)
    assert fmt == "%H:%M"
    assert np.diff(ticks).tolist() == [900.0] * 7  # 8 ticks over 7198 s: 22:15, 22:30, ...
    assert all(t % 900 == 0 for t in ticks)  # on the quarter hour (UTC, like the labels)


def test_zooming_in_to_two_seconds_ticks_each_half_second_with_milliseconds():
    report = report_widget(recording(600, [gpu_cell(1, T0 + 60, 100, GiB, 0)]))
    assert ticks_of(report)[1] == "%H:%M"  # 10 min: every 2 min
    brush(report, T0 + 100, T0 + 102)
    report.zoom_button.click()
    ticks, fmt = ticks_of(report)
    assert fmt == "%H:%M:%S.%L"
    assert ticks == [T0 + 100 + 0.5 * k for k in range(5)]
    report.reset_button.click()
    assert ticks_of(report)[1] == "%H:%M"


@pytest.mark.parametrize("seconds", [0.2, 1.1, 2.6, 45, 5000, 3 * 86400, 20 * 86400])
@pytest.mark.parametrize("offset", [0.0, 0.4])
def test_a_recording_of_any_length_has_three_time_labels_on_its_page_and_its_widget(
    seconds, offset
):
    # 200 samples over ``seconds``, from ``offset`` past a whole second: a 2.6 s recording
    # from 0.4 s past one was ticked at each second, and showed two labels; so were 1.1 s
    # (each half second), 0.2 s (each tenth) and 20 days (each week)
    made = recording(seconds, [], hz=200 / seconds)
    session = dataclasses.replace(made, times=made.times + offset, started=T0 + offset)
    ticks, fmt = ticks_of(report_widget(session))
    assert len(ticks) >= 3, (ticks, fmt)
    page = session.report_html()
    labels = re.findall(r'<text class="xtick"[^>]*>([^<]*)</text>', page)
    panels = page.count('<g class="panel">')
    assert panels >= 1 and len(labels) % panels == 0
    assert len(set(labels)) == len(labels) // panels >= 3, labels  # each panel: three or more


@pytest.mark.parametrize(
    ("span", "step", "fmt"),
    [
        (0.9, 0.2, "%H:%M:%S.%L"),
        (4, 1, "%H:%M:%S"),
        (20, 5, "%H:%M:%S"),
        (90, 15, "%H:%M:%S"),
        (600, 120, "%H:%M"),
        (3 * 3600, 1800, "%H:%M"),
        (86400, 6 * 3600, "%H:%M"),
        (3 * 86400, 12 * 3600, "%b %d %H:%M"),
        (20 * 86400, 4 * 86400, "%b %d"),  # whole weeks: two or three labels
        (40 * 86400, 7 * 86400, "%b %d"),
        (120 * 86400, 21 * 86400, "%b %d"),
    ],
)
def test_time_ticks_take_the_smallest_round_step_that_keeps_them_apart(span, step, fmt):
    lo = T0 + 0.05
    ticks, got = time_ticks(lo, lo + span)
    assert got == fmt
    assert 3 <= len(ticks) <= MAX_TIME_TICKS if step >= 1 else 3 <= len(ticks) <= 5
    assert np.allclose(np.diff(ticks), step)
    assert lo <= ticks[0] < lo + step and ticks[-1] <= lo + span
    assert all(abs(t / step - round(t / step)) < 1e-6 for t in ticks)  # on round multiples


@pytest.fixture
def host_only_monitor():
    mon = nbgpumon.Monitor()
    if mon.has_gpu:
        mon.close()
        pytest.skip("the host-only view needs a machine without an NVIDIA GPU")
    yield mon
    mon.close()


def test_a_live_monitor_without_gpu_shows_host_memory_and_refreshes(host_only_monitor):
    mon = host_only_monitor
    try:
        for _ in range(5):
            mon._session.sampler.tick()
            time.sleep(0.01)
        for n in (1, 2):
            opened = mon._session.ledger.begin("cell", f"keep{n} = bytearray(2**24)  # {XSS}", n)
            globals()[f"_keep{n}"] = bytearray(2**24)
            mon._session.ledger.add(mon._session.ledger.end(opened, "ok", ""))
        with mon.track("epoch 1"):
            time.sleep(0.01)
        mon.mark("after the cells")
        report = report_widget(mon.data)
        assert report.refresh_button is not None
        (rss,) = report.memory_lines
        assert rss.labels == ["host RSS"]
        assert 5 <= len(rss.y) <= MAX_POINTS and np.nanmin(rss.y) > 0
        assert report.util_figure not in report.children  # no GPU: no utilization
        assert list(report.cell_bars.x) == ["[1]", "[2]"]  # cells only; the region is listed
        host_rise = [max(0, r.rss_delta or 0) for r in mon.cells() if r.kind == "cell"]
        # the axis takes the unit of the highest bar (peak or kept), which can be KiB when the
        # RSS barely moved: read it back and check the bars are in it
        host_peak = [max(0, r.rss_peak - r.rss_before) for r in mon.cells() if r.kind == "cell"]
        unit, scale = byte_unit(max(*host_peak, *host_rise))
        assert report.bytes_axis.label == unit
        assert report.cell_bars.y[1].tolist() == pytest.approx([x / scale for x in host_rise])
        assert "no GPU (host memory)" in report.title.value and "2 cells" in report.title.value

        first, *_ = mon.cells()
        last = mon.cells()[-1]
        brush(report, first.start, last.start + last.duration)
        assert listed(report) == ["1", "2", ""]  # the region has no execution count here
        assert "2 cells and 1 region" in report.listing.value
        assert "&lt;img src=x onerror=alert(1)&gt;" in report.listing.value
        assert "<img" not in report.listing.value

        opened = mon._session.ledger.begin("cell", "x = 3", 3)
        mon._session.ledger.add(mon._session.ledger.end(opened, "ok", ""))
        before = report.memory_lines[0]
        report.refresh_button.click()
        assert before.comm is None  # the replaced marks were closed
        assert list(report.cell_bars.x) == ["[1]", "[2]", "[3]"]
        assert "3 cells" in report.title.value
    finally:
        globals().pop("_keep1", None)
        globals().pop("_keep2", None)


def test_a_live_report_starts_at_the_first_sample_not_at_the_bucket_holding_it(host_only_monitor):
    mon = host_only_monitor
    width = len(mon.timeline.columns)
    for k in range(70, 115):  # 7.0 s to 11.4 s past a 10 s boundary: buckets close
        mon.timeline.append(T0 + k / 10, [GiB + k * MiB] * width)
    report = report_widget(mon.data)
    (rss,) = report.memory_lines
    assert rss.x[0] == ms(T0 + 7.0) and len(rss.x) == 45
    assert rss.y[0] == pytest.approx((1024 + 70) / 1024)  # GiB, the first sample's
    assert "(4.4 s)" in report.title.value


@pytest.mark.gpu
def test_a_live_monitor_with_a_gpu_draws_nvml_memory_and_utilization():
    mon = nbgpumon.Monitor()
    if not mon.has_gpu:
        mon.close()
        pytest.skip("needs an NVIDIA GPU")
    try:
        for _ in range(4):
            mon._session.sampler.tick()
        report = report_widget(mon.data)
        assert report.memory_lines[0].labels == ["used (NVML)"]
        assert [line.labels for line in report.util_lines] == [["GPU util"], ["memory util"]]
        assert report.util_figure in report.children
        name = mon._session.device_source.devices[0].name
        assert f"GPU(s): gpu0 {name}" in report.title.value or f"GPU: gpu0 {name}" in (
            report.title.value
        )
    finally:
        mon.close()


def test_a_day_at_10_hz_draws_each_line_downsampled_and_the_newest_cells():
    # (how long it takes: bench/report_build.py, target 1 s)
    cells = [gpu_cell(n, T0 + 60 * n, 30, peak=GiB, kept=0) for n in range(1, 1441)]
    day = recording(86_400, cells)
    assert len(day.times) == 864_000
    report = report_widget(day)
    lines = report.memory_lines + report.util_lines
    assert len(lines) == 5 and all(m.y.shape == (MAX_POINTS,) for m in lines)
    assert len(report.cell_bars.x) == 400  # the newest cells only


def test_anything_else_is_refused_with_what_to_pass():
    with pytest.raises(TypeError, match=r"nbgpumon.monitor\(\).data or nbgpumon.load\(PATH\)"):
        report_widget("run.sqlite")


def _page_svg(page: str):
    import xml.etree.ElementTree as ET

    return ET.fromstring(page[page.index("<svg") : page.index("</svg>") + len("</svg>")])


def _texts(root, cls: str) -> list[str]:
    return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == cls]


def test_the_page_draws_a_one_sample_peak_and_sizes_its_memory_axis_by_it():
    # 10 minutes at 10 Hz: 6000 rows drawn as 1200; the 9 GiB sample is one of them
    root = _page_svg(recording(600, [gpu_cell(1, T0 + 1, 5, GiB, 0)]).report_html())
    memory = next(root.iter("{http://www.w3.org/2000/svg}g"))
    assert _texts(memory, "ytick") == ["0", "2", "4", "6", "8", "10"]  # GiB, past the 9
    tops = [
        min(float(p.split(",")[1]) for p in line.get("points").split())
        for line in memory.iter("{http://www.w3.org/2000/svg}polyline")
    ]
    plot = next(
        r for r in memory.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "plot"
    )
    top, height = float(plot.get("y")), float(plot.get("height"))
    assert min(tops) == pytest.approx(top + height * (1 - 9 / 10), abs=0.2)  # 9 of 10 GiB


def test_the_static_picture_of_a_session_draws_its_marks():
    from nbgpumon._views.widget.live_chart import static_svg

    session = recording(20, [gpu_cell(1, T0 + 1, 5, GiB, 0)], marks=[(T0 + 3, XSS)])
    root = _page_svg(static_svg(session))
    assert _texts(root, "mark-label") == [XSS]


def test_each_cells_peak_by_kind_is_in_the_listing_and_the_page():
    import dataclasses

    MiB = 2**20
    plain = gpu_cell(1, T0 + 1, 5, peak=GiB, kept=0)
    kinds = (("parameters", GiB - 64 * MiB), ("optimizer state <b>", 64 * MiB))  # (escaped)
    device = dataclasses.replace(plain.devices[0], kinds_after=kinds, peak_allocated=3 * GiB)
    step = dataclasses.replace(gpu_cell(2, T0 + 10, 5, peak=3 * GiB, kept=0), devices=(device,))
    session = recording(60, [plain, step])
    report = report_widget(session)
    brush(report, T0, T0 + 20)
    assert listed(report) == ["1", "2"]
    words = (
        "gpu0: parameters 960 MiB · optimizer state &lt;b&gt; 64.0 MiB · activations and "
        "temporaries 2.0 GiB"
    )
    row = re.search(r"<tr data-cell='2'.*?</tr>", report.listing.value).group(0)
    assert f"<td>{words}</td>" in row
    assert "<th>by kind</th>" in report.listing.value
    page = session.report_html()
    assert f"<li data-cell='2'>[2] peak by kind: {words}</li>" in page
    assert "<li data-cell='1'>" not in page.split("Memory by kind, per cell")[1].split("</ul>")[0]
