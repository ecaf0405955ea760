"""On a real NVIDIA GPU (``pytest -m gpu``): profiling a cell ranks operators by CUDA memory."""

from __future__ import annotations

import pytest

from gpu_required import cuda_tests
from notebook_runner import run_cells

torch, pytestmark = cuda_tests()
GIB = 2**30
SETUP = "import json, torch\nfrom nbgpumon._session.controls.profile_run import profile_cell"
REPORT = (
    "print('RESULT=' + json.dumps({'sort_by': r.sort_by, 'rows': r.rows, 'note': r.note,"
    " 'table': r.table, 'cuda': torch.cuda.is_initialized()}))"
)
BIG_AND_SMALL = (
    "r = profile_cell(get_ipython(), \"big = torch.empty(2**30, dtype=torch.uint8, device='cuda'); "
    "small = torch.ones(1024, device='cuda')\")\n" + REPORT
)
FIRST_CUDA = (
    "r = profile_cell(get_ipython(), "
    "\"t = torch.empty(2**30, dtype=torch.uint8, device='cuda')\")\n" + REPORT
)


@pytest.fixture(scope="module")
def cuda_up():
    """CUDA initialised by an earlier cell, so the CUDA activity is profiled too."""
    return run_cells(
        [
            SETUP,
            "first = torch.empty(2**20, dtype=torch.uint8, device='cuda')  # inits CUDA",
            BIG_AND_SMALL,
            "print('AFTER=' + json.dumps([big.numel(), float(small.sum())]))",
        ],
        timeout=300,
    )


@pytest.fixture(scope="module")
def cuda_down():
    """CUDA first initialised by the profiled cell itself: a CPU-only profile."""
    return run_cells(
        [SETUP + "\nprint('BEFORE=' + json.dumps(torch.cuda.is_initialized()))", FIRST_CUDA],
        timeout=300,
    )


def test_with_cuda_up_the_operator_that_allocated_most_cuda_memory_comes_first(cuda_up):
    assert cuda_up[2].error is None, cuda_up[2].text
    result = cuda_up[2].json_after("RESULT=")
    assert result["sort_by"] in ("self_cuda_memory_usage", "self_device_memory_usage")
    assert result["note"] == ""
    top = result["rows"][0]
    assert top["name"] == "aten::empty"
    # key_averages groups by name: torch.ones calls aten::empty too, for its 4 KiB block
    # (1024 float32, a multiple of the allocator's 512-byte rounding)
    assert top["calls"] == 2
    assert top["self_cuda_memory"] == GIB + 1024 * 4
    ones = next(r for r in result["rows"] if r["name"] == "aten::ones")
    assert ones["cuda_memory"] == 1024 * 4 and ones["self_cuda_memory"] == 0
    assert "Self CUDA Mem" in result["table"]
    assert cuda_up[3].json_after("AFTER=") == [GIB, 1024.0]


def test_with_cuda_up_kernel_times_are_recorded(cuda_up):
    rows = cuda_up[2].json_after("RESULT=")["rows"]
    assert all(r["cuda_time_us"] is not None for r in rows)
    # torch.ones fills on the device: fill_ launches a kernel
    fill = next(r for r in rows if r["name"] == "aten::fill_")
    assert fill["cuda_time_us"] > 0


def test_a_cell_that_first_initialises_cuda_still_shows_its_cuda_memory(cuda_down):
    assert cuda_down[0].json_after("BEFORE=") is False
    assert cuda_down[1].error is None, cuda_down[1].text
    result = cuda_down[1].json_after("RESULT=")
    assert result["cuda"] is True  # the cell did it, not the profiler
    assert "first initialised by this cell" in result["note"]
    top = result["rows"][0]
    assert top["name"] == "aten::empty"
    assert top["calls"] == 1
    assert top["self_cuda_memory"] == GIB
    assert top["cuda_time_us"] is None  # CPU activity only: no kernel times
    assert "Self CUDA Mem" in result["table"]
