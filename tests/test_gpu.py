"""On a real NVIDIA GPU (``pytest -m gpu``): the ledger against torch, NVML and nvidia-smi."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from nbgpumon._foundation.wording import counted

from gpu_required import cuda_tests
from notebook_runner import RECORDS_CELL, cells_by_label, run_cells

torch, pytestmark = cuda_tests()
GIB = 2**30
AFTER_BIGGER = "t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t  # after big"


def _cells(run) -> dict[str, dict]:
    return cells_by_label(run.json_after("RECORDS="))


@pytest.fixture(scope="module")
def gpu_run():
    return run_cells(
        [
            "%load_ext nbgpumon",
            "import torch, time, sys\nprint('BEFORE', torch.cuda.is_initialized())",
            "first = torch.empty(2**20, dtype=torch.uint8, device='cuda')  # inits CUDA",
            "y = torch.empty(2**30, dtype=torch.uint8, device='cuda')",
            "t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t",
            "big = torch.empty(4 * 2**30, dtype=torch.uint8, device='cuda'); del big",
            AFTER_BIGGER,
            "print('TORCH', torch.cuda.memory_allocated(0), torch.cuda.memory_reserved(0))",
            "a = torch.randn(8192, 8192, device='cuda')\n"
            "end = time.time() + 2.5\n"
            "while time.time() < end:\n"
            "    b = a @ a\n"
            "torch.cuda.synchronize(); del b",
            "%gpumon summary on",
            "z = torch.empty(2**30, dtype=torch.uint8, device='cuda')",
            "%gpumon summary off",
            "%gpumon status",
            "%gpumon",
            RECORDS_CELL,
        ],
        timeout=300,
    )


def test_load_ext_before_any_cuda_use_leaves_cuda_uninitialized(gpu_run):
    assert gpu_run[1].stdout.split() == ["BEFORE", "False"]
    load = gpu_run[0].text.strip()
    assert len(load.splitlines()) == 1
    assert f"watching {counted(torch.cuda.device_count(), 'GPU')} (NVIDIA" in load


def test_the_cell_that_initialises_cuda_is_measured_from_zero(gpu_run):
    first = _cells(gpu_run[-1])[
        "first = torch.empty(2**20, dtype=torch.uint8, device='cuda')  # inits CUDA"
    ]
    assert first["gpu0.allocated_before"] == 0
    assert first["gpu0.allocated_after"] == 2**20
    assert first["gpu0.peak_exact"] is True
    assert first["retained"] == 2**20
    assert first["gpu0.nvml_used_delta"] > 2**20  # the context itself costs hundreds of MiB


def test_one_gib_retained_after_torch_empty(gpu_run):
    kept = _cells(gpu_run[-1])["y = torch.empty(2**30, dtype=torch.uint8, device='cuda')"]
    assert kept["retained"] == GIB
    assert kept["gpu0.allocated_delta"] == GIB
    assert kept["gpu0.peak_allocated"] == kept["gpu0.allocated_before"] + GIB
    assert kept["gpu0.nvml_used_delta"] >= GIB  # the driver saw the reservation grow


def test_exact_peak_of_a_transient_one_gib(gpu_run):
    cells = _cells(gpu_run[-1])
    transient = cells["t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t"]
    assert transient["retained"] == 0
    assert transient["gpu0.peak_exact"] is True
    assert transient["gpu0.peak_allocated"] - transient["gpu0.allocated_before"] == GIB


def test_exact_peak_after_a_bigger_earlier_peak(gpu_run):
    later = _cells(gpu_run[-1])[AFTER_BIGGER]
    assert later["gpu0.peak_exact"] is True
    assert later["gpu0.peak_allocated"] - later["gpu0.allocated_before"] == GIB


def test_ledger_numbers_equal_torchs_own_counters(gpu_run):
    _, allocated, reserved = gpu_run[7].stdout.split()
    cells = _cells(gpu_run[-1])
    last = cells[AFTER_BIGGER]
    assert last["gpu0.allocated_after"] == int(allocated)
    assert last["gpu0.reserved_after"] == int(reserved)


def test_a_busy_cell_shows_high_utilization(gpu_run):
    busy = next(r for r in _cells(gpu_run[-1]).values() if r["label"].startswith("a = torch.randn"))
    assert busy["gpu0.util_max"] >= 90
    assert busy["gpu0.util_mean"] >= 50


def test_summary_line_on_a_gpu(gpu_run):
    line = gpu_run[10].stdout.strip()
    # one GPU: the figures alone; several: named by the GPU they were on (gpu0 is cuda:0 here)
    assert line.startswith(
        ("[11] +1.0 GiB alloc · peak ", "[11] gpu0 (cuda:0): +1.0 GiB alloc, peak ")
    ), line
    assert "kept 1.0 GiB" in line


def test_status_lists_the_device(gpu_run):
    status = gpu_run[12].text
    assert "gpu0: NVIDIA" in status and "cuda:0" in status
    assert "  torch: active: cuda:0 " in status


def test_reset_mode_says_once_that_it_resets_torchs_peak_counters(gpu_run):
    notices = [r.text for r in gpu_run if "peak memory counters now restart" in r.text]
    assert len(notices) == 1


def test_preserve_mode_leaves_max_memory_allocated_global():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%config GPUMon.peak_mode = 'preserve'",
            "import torch\nbig = torch.empty(2 * 2**30, dtype=torch.uint8, device='cuda'); del big",
            "t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t",
            "print('MAX', torch.cuda.max_memory_allocated(0))",
            RECORDS_CELL,
        ],
        timeout=300,
    )
    assert int(runs[4].stdout.split()[1]) == 2 * GIB
    cells = _cells(runs[-1])
    first = cells["import torch"]  # the cell that allocated and freed 2 GiB
    later = cells["t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t"]
    assert first["gpu0.peak_exact"] is True and first["gpu0.peak_allocated"] == 2 * GIB
    assert later["gpu0.peak_exact"] is False  # under the old high: only a sampled lower bound
    assert later["gpu0.peak_allocated"] <= GIB
    assert not any("peak memory counters now restart" in r.text for r in runs)


@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs nvidia-smi")
def test_nvml_memory_agrees_with_nvidia_smi():
    from nbgpumon._sources.devices.nvml.source import FAST_METRICS, NvmlSource

    source = NvmlSource()
    assert source.open()
    row = source.read()
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[0]
    used_mib, total_mib = (int(v) for v in smi.split(","))
    used = row[FAST_METRICS.index("mem_used")]
    total = row[FAST_METRICS.index("mem_total")]
    source.close()
    assert abs(total / 2**20 - total_mib) <= 1
    assert abs(used / 2**20 - used_mib) <= 4


def test_the_gil_keeping_nvml_calls_read_what_the_binding_reads():
    import pynvml

    from nbgpumon._sources.devices.nvml.source import NvmlSource

    source = NvmlSource()
    assert source.open()
    library = source.library
    assert library.gil_kept == ("nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates")
    handle = source._state[0].handle
    kept = library._gil_keeping["nvmlDeviceGetMemoryInfo"](handle, pynvml.nvmlMemory_v2)
    binding = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
    util = library._gil_keeping["nvmlDeviceGetUtilizationRates"](handle)
    source.close()
    assert (kept.total, kept.reserved) == (binding.total, binding.reserved)
    assert abs(kept.used - binding.used) <= 64 * 2**20  # read a moment apart
    assert 0 <= util.gpu <= 100 and 0 <= util.memory <= 100
