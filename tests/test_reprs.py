"""Every object a user may end a cell with shows a few lines (at most 2,000 characters
whatever the size of the data) and, where a notebook shows HTML, an HTML repr in which user
data (a path, a cell's source, a label) is text, never markup."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import nbgpumon
from nbgpumon import Monitor
from nbgpumon._api.compare import Comparison
from nbgpumon._api.explain import Explanation
from nbgpumon._api.holders import HolderReport
from nbgpumon._api.recorded import Recorded
from nbgpumon._forensics.explain import MemoryExplained
from nbgpumon._forensics.holder_scan import Holder, HolderScan
from nbgpumon._foundation.wording import format_seconds
from nbgpumon._ledger.peak_fit import fit_line, predict
from nbgpumon._ledger.records import CellRecord, DeviceUsage
from nbgpumon._session.analysis.comparison import Thresholds
from nbgpumon._session.analysis.size_fit import FitRun, SizeRow
from nbgpumon._session.config import GPUMon
from nbgpumon._views.reprs.fit_result import FitResult

from notebook_runner import fake_pynvml, run_cells
from waiting import until

LIMIT = 2000
GIB, MIB = 2**30, 2**20
XSS = "<script>alert(1)</script>"
T0 = 1_700_000_000.0
COLUMNS = ["gpu0.nvml.mem_used", "gpu0.nvml.gpu_util", "gpu0.torch.allocated", "host.rss"]


def _short(obj: object) -> str:
    text = repr(obj)
    assert len(text) <= LIMIT, f"{len(text)} characters:\n{text[:3000]}"
    return text


def _escaped(page: str) -> None:
    """The user's ``XSS`` is in ``page`` as text only."""
    assert XSS not in page and "<script" not in page
    assert "&lt;script&gt;" in page


TRACED = tuple(f"line {i} — 1.0 MiB" for i in range(500))


def _count(n: int, noun: str) -> str:
    """A pattern for ``n`` ``noun`` in words, with or without a thousands separator."""
    return rf"\b({n}|{n:,}) {noun}\b"


def _cell(n: int, *, rss_kept: int = 0, long: int = 200) -> CellRecord:
    source = f"x{n} = f({n})  # {XSS} " + "y" * long  # a long first line
    device = DeviceUsage(
        index=0, cuda_index=0, name=f"Fake H200 {XSS}",
        allocated_before=GIB, allocated_after=GIB, reserved_before=2 * GIB,
        reserved_after=2 * GIB, device_used_before=3 * GIB, device_used_after=3 * GIB,
        peak_allocated=GIB, peak_exact=True, allocated_total=GIB, util_mean=50.0,
        util_max=90.0,
    )  # fmt: skip
    return CellRecord(
        index=n, kind="cell", execution_count=n, cell_id=None, label=source.splitlines()[0],
        start=T0 + n, duration=0.5, status="ok", error="", devices=(device,),
        rss_before=GIB, rss_after=GIB + rss_kept, rss_peak=GIB + rss_kept, rss_peak_exact=True,
        source=source, source_hash=f"{n:016x}", traced=TRACED,
    )  # fmt: skip


def _recorded(cells: list[CellRecord], samples: int = 200_000, gpus: int = 16) -> Recorded:
    times = T0 + np.arange(samples) / 10
    return Recorded(
        path=Path(f"/tmp/{XSS}/" + "deep/" * 100 + "run.sqlite"), session_id=3, started=T0,
        host=f"node {XSS}", gpus=[{"index": i, "name": f"NVIDIA H200 {XSS}",
                                   "memory_total": 141 * GIB} for i in range(gpus)],
        driver="580", versions={}, columns=list(COLUMNS), times=times,
        values=np.ones((samples, len(COLUMNS))), records=cells, marks=[(T0 + 1, XSS)] * 5000,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording by a real Monitor at 100 Hz on one GPU (faked at NVML's boundary),
    with 2,000 regions whose labels hold markup, in a file whose path does too."""
    folder = tmp_path_factory.mktemp("reprs") / XSS.replace("/", "")
    folder.mkdir()
    path = folder / "run.sqlite"
    gpu = fake_pynvml(devices=[{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}])
    mon = Monitor(GPUMon(interval=0.01), nvml_module=gpu)
    try:
        mon.start()
        mon.record(path)
        for i in range(2000):
            with mon.track(f"step {i} {XSS} " + "z" * 150):
                pass
        writer = mon._session.recording_control.writer
        until(lambda: writer.rows_written >= 300, "300 samples written")
        mon.record(None)
    finally:
        mon.close()
    return path


def test_a_loaded_recording_shows_its_file_span_and_cells_in_a_few_lines(recording):
    session = nbgpumon.load(recording)
    text = _short(session)
    assert len(text.splitlines()) <= 8
    assert text.startswith(f"nbgpumon recording: {recording}, session 1\n")
    span = format_seconds(float(session.times[-1] - session.times[0]))
    assert f", {span}: {len(session.times):,} samples every " in text
    regions = [r for r in session.cells() if r.kind == "region"]
    assert len(regions) == 2000 and re.search(_count(len(regions), "regions"), text)
    assert "1 GPU: gpu0 Fake H200 (141 GiB)" in text
    _escaped(session._repr_html_())
    assert str(recording).replace("<", "&lt;").replace(">", "&gt;") in session._repr_html_()


def test_in_a_notebook_each_object_ending_a_cell_shows_short_text_and_escaped_html(recording):
    ends = [
        f"import nbgpumon\nPATH = {str(recording)!r}\nnbgpumon.load(PATH)",
        "nbgpumon.load(PATH).cells()",
        "nbgpumon.compare(PATH, PATH)",
        "%load_ext nbgpumon",
        "nbgpumon.monitor()",
        "nbgpumon.holders('host')",
    ]
    runs = run_cells(ends)
    for i in (0, 1, 2, 4, 5):
        (result,) = [o for o in runs[i].outputs if o.get("output_type") == "execute_result"]
        text, page = result["data"]["text/plain"], result["data"]["text/html"]
        assert 0 < len(text) <= LIMIT, text
        assert "<script" not in page, page[:500]
    assert runs[0].text.startswith(f"nbgpumon recording: {recording}, session 1")
    assert runs[1].text.startswith("0 cells and 2,000 regions; the newest 10, oldest first:")
    assert "&lt;script&gt;" in runs[1].outputs[0]["data"]["text/html"]
    assert re.search(_count(2000, "matched, 0 regressions"), runs[2].text)
    assert runs[4].text.startswith("nbgpumon monitor: ")
    assert runs[5].text.startswith("nbgpumon holders of host memory: ")


def test_a_recording_of_any_size_keeps_its_repr_short():
    session = _recorded([_cell(n) for n in range(3000)])
    text = _short(session)
    first = text.splitlines()[0]  # a path longer than a line: its start and its file
    assert first.startswith("nbgpumon recording: /tmp/") and first.endswith(
        "/run.sqlite, session 3"
    )
    assert "16 GPUs: gpu0 NVIDIA H200" in text and "5,000 marks" in text
    assert re.search(_count(3000, "cells"), text)
    assert "from 2023-11-14 22:13:20 UTC, 5 h 33 min: 200,000 samples every 0.1 s" in text
    _escaped(session._repr_html_())
    assert len(session._repr_html_()) < 2 * LIMIT


def test_a_report_widget_is_one_line_where_it_cannot_be_drawn():
    records = [_cell(n) for n in range(3000)]
    report = _recorded(records, samples=20_000).report()
    text = _short(report)
    assert text.startswith("<nbgpumon report of /tmp/") and "/run.sqlite (session 3): " in text
    assert re.search(_count(3000, "cells") + ", 20,000 samples; a notebook draws it>$", text)
    comparison = Comparison(_recorded(records, 10), _recorded(records, 10), Thresholds())
    text = _short(comparison.report())
    assert text.startswith("<nbgpumon comparison report: /tmp/")
    assert text.endswith(" 3,000 rows; a notebook draws it>")


def test_a_cells_list_shows_how_many_and_the_newest_whatever_its_length():
    records = [_cell(n) for n in range(9_999)] + [_cell(9_999, long=70_000)]  # 64 KiB+
    cells = _recorded(records, samples=10).cells()
    assert isinstance(cells, list) and cells == records and cells[-1] is records[-1]
    text = _short(cells)
    assert text.startswith("10,000 cells; the newest 10, oldest first:")
    assert "[9999] " in text and "[9989] " not in text
    assert "# x9999 = f(9999)" in text
    page = cells._repr_html_()
    _escaped(page)
    assert "10,000 cells; the newest 20:" in page
    assert page.count("<tr>") == 1 + 20  # the newest 20, as %gpumon cells shows
    assert _short(cells[-1]).startswith("CellRecord(index=9999, kind='cell', execution_count=")


def test_the_live_monitor_its_cells_and_a_region_show_short(tmp_path):
    mon = Monitor(GPUMon(), nvml_module=fake_pynvml(devices=[{"name": "Fake H200"}]))
    try:
        for i in range(500):
            with mon.track(f"epoch {i} {XSS}") as region:
                pass
        text = _short(mon)
        assert text.startswith("nbgpumon monitor: ")
        assert re.search(r"\b500 regions in the ledger\b", text)
        _escaped(mon.cells()._repr_html_())
        assert mon._repr_html_().startswith("<pre ")
        assert _short(mon.cells()).startswith("0 cells and 500 regions; the newest 10")
        assert _short(region) == f"<Region 'epoch 499 {XSS}': ended>"
        assert _short(mon.track("open one").__enter__()).endswith(": open>")
    finally:
        mon.close()
    assert _short(mon)  # a closed monitor still says what it is


def test_a_comparison_shows_the_regressions_first_and_counts_the_rest():
    a = [_cell(n) for n in range(3000)]
    b = [_cell(n) for n in range(2999)] + [_cell(2999, rss_kept=4 * GIB)]  # the last regressed
    comparison = Comparison(_recorded(a, 10), _recorded(b, 10), Thresholds())
    text = _short(comparison)
    assert re.search(_count(3000, "matched, 1 regression"), text)
    assert text.splitlines()[0].endswith("/run.sqlite (session 3)")
    (row,) = [line for line in text.splitlines() if line.startswith("[2999] ")]
    assert " regression " in row and "host kept +4.0 GiB" in row
    assert re.search(r"… 2,9\d\d more rows: print\(comparison\) shows every row", text)
    whole = str(comparison)
    assert len(whole.splitlines()) == 3 + 1 + 1 + 3000  # heading, blank, header, every row
    page = comparison._repr_html_()
    _escaped(page)
    assert page.count("<tr") == 1 + 50  # the header and 50 rows, the regression among them
    assert "background:#fde2e1" in page
    assert _short(comparison.changes).count("<CellChange") < 3000
    (regression,) = comparison.regressions
    assert _short(regression).startswith("<CellChange [2999] same source, regression: host")
    assert _short(comparison.regressions).startswith("[<CellChange [2999]")


def test_a_fit_of_many_sizes_shows_the_first_and_last_and_prints_them_all():
    sizes = range(1, 401)
    kinds = ("torch:0", "torch:1", "host")  # a line of figures for each
    rows = tuple(
        SizeRow(n, "ok", 0.01, {k: 64 * MIB * n for k in kinds}, dict.fromkeys(kinds, True),
                dict.fromkeys(kinds, 0))
        for n in sizes
    )  # fmt: skip
    fits = {k: fit_line(k, [(n, 64 * MIB * n) for n in sizes]) for k in kinds}
    predictions = {k: predict(fits[k], 80 * GIB, GIB, 400) for k in kinds}
    result = FitResult(FitRun("fit", rows, kinds, fits, predictions, warmup=1))
    text = _short(result)
    lines = text.splitlines()
    assert lines[0].startswith("nbgpumon.fit: peak growth of step(size), 400 sizes, after a ")
    sizes_shown = [line.split()[0] for line in lines[2:] if re.match(r"^\s+(\d+|…)\s", line)]
    assert sizes_shown[0] == "1" and sizes_shown[-1] == "400" and "…" in sizes_shown
    assert re.search(r"…\s+3\d\d more sizes", text)
    assert all(f"  {k}: 64.0 MiB per size" in text for k in kinds)  # every kind's line
    assert len(str(result).splitlines()) > 400  # print shows every size
    assert result._repr_html_().startswith("<pre ")


def test_an_explanation_of_many_gpus_is_short_and_prints_whole():
    entries = Explanation(
        MemoryExplained(
            index=i, device=f"cuda:{i} {XSS}", total=10 * GIB,
            categories={"parameters": 4 * GIB, "gradients": 4 * GIB, "unexplained": 2 * GIB},
            measured="the driver's figure for this process", notes=(f"a note {XSS}",),
        )
        for i in range(64)
    )  # fmt: skip
    text = _short(entries)
    assert text.startswith("nbgpumon explain: this kernel's GPU memory by what it is\ngpu0 ")
    assert text.splitlines()[-1].endswith("more lines: print(nbgpumon.explain()) shows them all")
    assert "gpu63 " in str(entries)
    _escaped(entries._repr_html_())


def test_a_holder_scan_of_thousands_is_short_and_escaped():
    holders = tuple(Holder(f"var{i} {XSS}", GIB, 1, False) for i in range(5000))
    scan = HolderReport.of(
        HolderScan(
            device="host", holders=holders, total=5000 * GIB, objects=1, seconds=0.01,
            partial=None, categories={f"cuda:{i}": {"parameters": GIB} for i in range(300)},
        )
    )  # fmt: skip
    text = _short(scan)
    assert text.startswith("nbgpumon holders of host memory: 4.9 TiB in 5,000 holders, 1 object ")
    assert re.search(r"… 4,?980 more, ", text)
    assert "by kind, cuda:299" in str(scan)  # print gives every line
    _escaped(scan._repr_html_())
