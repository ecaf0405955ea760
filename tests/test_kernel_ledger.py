"""The ledger in real kernels: host memory is real on CPU, so these numbers are real."""

from __future__ import annotations

import re

import pytest

from notebook_runner import RECORDS_CELL, cells_by_label, run_cells

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
    # %load_ext is cell 1 but is measured only from the cell after it
    assert counts == list(range(2, 2 + len(counts)))
    assert records[0]["label"] == "import numpy as np"


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
    assert found and 256 * 0.98 <= float(found[1]) <= 256 * 1.02, kept  # 256 MiB, 2% of noise


def test_summary_line_follows_each_cell_when_on():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
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
            "%load_ext nbgpumon",
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
            "%load_ext nbgpumon",
            "import numpy as np; z = np.ones(32 * 2**20 // 8)",
            "import nbgpumon\nf = nbgpumon.cells_frame()\n"
            "print('SHAPE', len(f), f.loc[f.execution_count == 2, 'rss_delta'].iloc[0])",
        ]
    )
    words = runs[2].stdout.split()
    assert words[0] == "SHAPE" and int(words[1]) == 1
    assert int(words[2]) == pytest.approx(32 * 2**20, rel=0.02)
