"""The ledger in real kernels: host memory is real on CPU, so these numbers are real. And what
the ledger keeps of a cell's source, and what that costs it."""

from __future__ import annotations

import hashlib
import re
import sys
import tracemalloc
from collections.abc import Callable

import pytest

from nbgpumon import Monitor
from nbgpumon._ledger.cell_source import SOURCE_BUDGET

from notebook_runner import RECORDS_CELL, cells_by_label, fake_pynvml, run_cells

MIB = 2**20
SIZE = 256 * MIB  # large enough that allocator noise is far below 2%


@pytest.fixture(scope="module")
def allocation_run():
    cells = [
        "%load_ext nbgpumon",
        "import numpy as np",
        f"kept = np.ones({SIZE // 8})  # keeps 256 MiB",
        f"tmp = np.ones({SIZE // 8}); del tmp  # transient 256 MiB",
        "del kept  # gives 256 MiB back",
        "raise ValueError('boom')",
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)",
        "%gpumon cells 10",
        RECORDS_CELL,
    ]
    return run_cells(cells)


def test_load_prints_at_most_one_line(allocation_run):
    out = allocation_run[0].text.strip()
    assert len(out.splitlines()) == 1
    assert out.startswith("nbgpumon ")


def test_retained_host_memory_is_charged_to_the_cell_that_kept_it(allocation_run):
    by_label = cells_by_label(allocation_run[-1].json_after("RECORDS="))
    kept = by_label[f"kept = np.ones({SIZE // 8})  # keeps 256 MiB"]
    assert kept["rss_delta"] == pytest.approx(SIZE, rel=0.02)
    assert kept["status"] == "ok"


def test_a_transient_allocation_shows_in_the_peak_but_not_the_delta(allocation_run):
    by_label = cells_by_label(allocation_run[-1].json_after("RECORDS="))
    transient = by_label[f"tmp = np.ones({SIZE // 8}); del tmp  # transient 256 MiB"]
    assert abs(transient["rss_delta"]) < 0.02 * SIZE
    assert transient["rss_peak_exact"] is True
    assert transient["rss_peak"] - transient["rss_before"] == pytest.approx(SIZE, rel=0.02)


def test_freeing_memory_shows_as_a_negative_delta(allocation_run):
    by_label = cells_by_label(allocation_run[-1].json_after("RECORDS="))
    freed = by_label["del kept  # gives 256 MiB back"]
    assert freed["rss_delta"] == pytest.approx(-SIZE, rel=0.02)


def test_records_carry_execution_counts_in_order(allocation_run):
    records = [r for r in allocation_run[-1].json_after("RECORDS=") if r["kind"] == "cell"]
    counts = [r["execution_count"] for r in records]
    # %load_ext is cell 1 but is measured only from the cell after it; every cell after it
    # up to the one asking (still running, so not yet recorded) has its record: 2 .. 8
    assert counts == list(range(2, len(allocation_run)))
    assert records[0]["label"] == "import numpy as np"
    assert records[-1]["label"] == "%gpumon cells 10"


def test_an_exception_is_recorded_with_error_status(allocation_run):
    by_label = cells_by_label(allocation_run[-1].json_after("RECORDS="))
    failed = by_label["raise ValueError('boom')"]
    assert failed["status"] == "error"
    assert failed["error"] == "ValueError: boom"


def test_a_keyboard_interrupt_is_recorded_as_interrupted(allocation_run):
    assert allocation_run[6].error == "KeyboardInterrupt"
    by_label = cells_by_label(allocation_run[-1].json_after("RECORDS="))
    interrupted = by_label["import os, signal, time"]
    assert interrupted["status"] == "interrupted"
    assert interrupted["duration"] < 4  # the interrupt cut the 5 s sleep short


def test_cells_table_lists_the_cells_newest_first(allocation_run):
    table = allocation_run[7].text
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["cell", "status", "time"]
    assert lines[1].startswith("[7]") and "interrupted" in lines[1]
    kept = next(line for line in lines if line.startswith("[3] "))
    found = re.search(r" \+([0-9.]+) MiB ", kept)
    # 256 MiB: the process's RSS, to which the kernel's other threads may add a few MiB
    assert found and 256 * 0.98 <= float(found[1]) <= 256 + 8, kept


def test_summary_line_follows_each_cell_when_on():
    runs = run_cells(
        [
            "%load_ext nbgpumon\nimport numpy",  # (numpy's own import: not a measured cell's)
            "%gpumon summary on",
            # 80 MiB: clear of the 64 MiB leak threshold whatever pages the interpreter moves
            "import numpy as np\nx = np.ones(80 * 2**20 // 8)",
            "%gpumon summary off",
            "y = 1",
        ]
    )
    summary = runs[2].stdout.strip().splitlines()
    assert len(summary) == 1
    assert summary[0].startswith("[3] ")
    # a transient peak above what it kept may show too: "(peak +82.0 MiB)"
    found = re.search(
        r"^\[3\] host \+([0-9.]+) MiB(?: \(peak \S+ MiB\))?: x 80\.0 MiB · ", summary[0]
    )
    assert found and 78 <= float(found[1]) <= 84, summary[0]
    assert runs[4].stdout == ""


def test_track_records_a_region_inside_a_cell_with_its_cells_number():
    runs = run_cells(
        [
            "%load_ext nbgpumon\nimport numpy",  # (numpy's own import: not a measured cell's)
            "import nbgpumon, numpy as np\n"
            "with nbgpumon.track('epoch 3') as region:\n"
            "    a = np.ones(128 * 2**20 // 8)\n"
            "b = np.ones(64 * 2**20 // 8)",
            "nbgpumon.mark('after epoch 3')",
            RECORDS_CELL,
        ]
    )
    records = runs[-1].json_after("RECORDS=")
    region = next(r for r in records if r["kind"] == "region")
    cell = next(r for r in records if r["kind"] == "cell" and r["execution_count"] == 2)
    assert region["label"] == "epoch 3"
    assert region["execution_count"] == 2
    assert region["rss_delta"] == pytest.approx(128 * 2**20, rel=0.02)
    # the enclosing cell saw both allocations; its peak stayed exact across the region
    assert cell["rss_delta"] == pytest.approx(192 * 2**20, rel=0.02)
    assert cell["rss_peak_exact"] is True
    assert cell["rss_peak"] >= cell["rss_before"] + 192 * 2**20 * 0.98


def test_cells_frame_is_a_dataframe_of_the_ledger():
    runs = run_cells(
        [
            "%load_ext nbgpumon\nimport numpy",  # (numpy's own import: not a measured cell's)
            "import numpy as np; z = np.ones(32 * 2**20 // 8)",
            "import nbgpumon\nf = nbgpumon.cells_frame()\n"
            "print('SHAPE', len(f), f.loc[f.execution_count == 2, 'rss_delta'].iloc[0])",
        ]
    )
    words = runs[2].stdout.split()
    assert words[0] == "SHAPE" and int(words[1]) == 1
    assert int(words[2]) == pytest.approx(32 * 2**20, rel=0.02)


# A cell that only waits: until the timeline closes one more 1 s bucket (a condition, with a
# 30 s deadline, not a fixed sleep); prints "CLOSED True" once it has.
WAIT_FOR_A_BUCKET = (
    "import time as _t, nbgpumon as _n\n_buckets = _n.monitor().timeline._rings().levels[0]\n"
    "_b, _d = _buckets.count, _t.monotonic() + 30\n"
    "while _buckets.count == _b and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "print('CLOSED', _buckets.count > _b)"
)


def test_numpys_first_fold_is_not_charged_to_a_cell_that_only_waits():
    """The sampler's first fold with numpy grows the process by about 0.6 MiB; it happens before
    a cell's start readings, so a cell that allocates nothing and outlasts a bucket's close
    keeps (nearly) nothing on the host."""
    runs = run_cells(
        [
            "%load_ext nbgpumon\nimport numpy",  # numpy loaded, no bucket folded with it yet
            WAIT_FOR_A_BUCKET,  # a bucket closes while it runs, folded with numpy
            "import nbgpumon\nprint('KEPT', nbgpumon.cells()[-1].rss_delta)",
        ]
    )
    assert runs[1].stdout.split() == ["CLOSED", "True"]  # the fold happened during the cell
    kept = int(runs[2].stdout.split()[1])
    assert kept < 0.3 * 2**20, kept


# -- a cell's source: kept up to 64 KiB, hashed whole -------------------------------------
LIMIT = 64 * 1024
BEGIN_ALIKE = ["import numpy as np\nx = np.ones(8)", "import numpy as np\ny = np.zeros(8)"]
# 5 ASCII bytes, then "€" (3 bytes each): byte 65,536 falls 2 bytes into a "€"
LONG = "s = '" + "€" * 30_000 + "'"
REGION = "import nbgpumon\nwith nbgpumon.track('epoch 1'):\n    pass"
ROW_SIZE = (
    "import json, nbgpumon\nfrom nbgpumon._views.widget.live_chart import cell_row\n"
    "print('ROW', max(len(json.dumps(cell_row(r))) for r in nbgpumon.cells()))"
)


def sha256_16(source: str) -> str:
    """The hash the README promises: 16 hex digits of SHA-256 of the UTF-8 source."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


@pytest.fixture(scope="module")
def source_runs():
    """Two kernels: one runs cells that begin alike, a long cell and a region; the other runs
    one of the same cells again."""
    first = run_cells(["%load_ext nbgpumon", *BEGIN_ALIKE, LONG, REGION, ROW_SIZE, RECORDS_CELL])
    second = run_cells(["%load_ext nbgpumon", "a = 1", "b = 2", BEGIN_ALIKE[1], RECORDS_CELL])
    return first[-1].json_after("RECORDS="), second[-1].json_after("RECORDS="), first


def _by_source(records: list[dict]) -> dict[str, dict]:
    return {r["source"]: r for r in records if r["kind"] == "cell"}


def test_cells_that_begin_alike_keep_their_sources_and_have_different_hashes(source_runs):
    records, _, _ = source_runs
    x, y = (_by_source(records)[source] for source in BEGIN_ALIKE)
    assert x["label"] == y["label"] == "import numpy as np"
    assert x["source_hash"] != y["source_hash"]
    assert [x["source_hash"], y["source_hash"]] == [sha256_16(s) for s in BEGIN_ALIKE]
    assert x["source_cut"] is False and y["source_cut"] is False


def test_the_same_source_has_the_same_hash_in_another_kernel(source_runs):
    records, elsewhere, _ = source_runs
    here, there = _by_source(records)[BEGIN_ALIKE[1]], _by_source(elsewhere)[BEGIN_ALIKE[1]]
    assert here["execution_count"] != there["execution_count"]  # another cell number, too
    assert here["source_hash"] == there["source_hash"] == sha256_16(BEGIN_ALIKE[1])


def test_a_cell_over_64_kib_is_cut_between_characters_and_hashed_whole(source_runs):
    records, _, runs = source_runs
    (long,) = [r for r in records if r["label"].startswith("s = '")]
    whole = LONG.encode("utf-8")
    assert len(whole) > LIMIT and whole[LIMIT] & 0xC0 == 0x80  # the limit is inside a "€"
    kept = long["source"]
    assert long["source_cut"] is True and LONG.startswith(kept)
    assert kept == "s = '" + "€" * ((LIMIT - 5) // 3)  # the "€" that didn't fit is left out
    assert len(kept.encode("utf-8")) == LIMIT - 2
    assert long["source_hash"] == sha256_16(LONG) != sha256_16(kept)
    # the live chart gets a row per cell, without the source
    assert int(runs[-2].stdout.split()[1]) < 2000


def test_a_region_has_no_source_of_its_own_and_its_cell_has_one(source_runs):
    records, _, _ = source_runs
    (region,) = [r for r in records if r["kind"] == "region"]
    assert (region["label"], region["source"], region["source_hash"]) == ("epoch 1", "", None)
    assert region["source_cut"] is False
    cell = _by_source(records)[REGION]
    assert cell["execution_count"] == region["execution_count"]
    assert cell["source_hash"] == sha256_16(REGION)


def _ledger_memory(source: Callable[[int], str], cells: int) -> tuple[int, list]:
    """Bytes a fresh ledger holds after ``cells`` cells, the i-th with a new string
    ``source(i)`` (made while memory is traced, as IPython gives each cell a new one), and
    its records."""
    mon = Monitor(nvml_module=fake_pynvml(devices=[{"name": "Fake H200"}]))
    try:
        ledger = mon._session.ledger
        ledger.add(ledger.end(ledger.begin("cell", "warm up", 0, source="warm up")))
        tracemalloc.start()
        try:
            for i in range(cells):
                ledger.add(ledger.end(ledger.begin("cell", "", i + 1, source=source(i))))
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        return held, ledger.records()[1:]
    finally:
        mon.close()


def _numbered(i: int) -> str:
    return f"cell = {i}\n" + "#" * (LIMIT - 20)


def test_a_cell_run_again_and_again_keeps_one_copy_of_its_source():
    text = "x = 1\n" + "#" * (LIMIT - 10)
    held, records = _ledger_memory(lambda _: text.encode().decode(), 1000)
    assert held < 4 * 2**20  # one copy (and the records), not 1000 x 64 KiB = 64 MiB
    assert all(r.source is records[-1].source and r.source == text for r in records)


def test_the_ledger_lets_go_of_its_oldest_sources_past_its_budget_and_keeps_their_hashes():
    held, records = _ledger_memory(_numbered, 800)  # 50 MiB of sources
    assert held < SOURCE_BUDGET + 4 * 2**20
    kept = [r for r in records if r.source]
    sizes = sum(sys.getsizeof(r.source) for r in kept)
    assert SOURCE_BUDGET - sys.getsizeof(kept[0].source) < sizes <= SOURCE_BUDGET
    assert [r.source for r in kept] == [_numbered(i) for i in range(800 - len(kept), 800)]
    assert all(r.source == "" and r.source_cut for r in records[: -len(kept)])
    assert [r.source_hash for r in records] == [sha256_16(_numbered(i)) for i in range(800)]
