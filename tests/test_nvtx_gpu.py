"""On a real NVIDIA GPU (``pytest -m gpu``): ``%gpumon nvtx on`` puts an NVTX range around
each cell and ``track()`` region of a real kernel, seen by an NVTX tool attached the way
Nsight Systems attaches (``NVTX_INJECTION64_PATH``): ``tests/nvtx_probe/nvtx_probe.c``, which
logs every push and pop."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_required import cuda_tests
from notebook_runner import run_cells

torch, pytestmark = cuda_tests()
PROBE = Path(__file__).parent / "nvtx_probe" / "nvtx_probe.c"


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler on this machine to build the NVTX probe")
    built = tmp_path_factory.mktemp("nvtx") / "nvtx_probe.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(built), str(PROBE)], check=True)
    return built


@pytest.fixture(scope="module")
def traced(probe):
    log = probe.parent / "nvtx.log"
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon nvtx on",  # torch not imported yet: armed
            "import torch\nx = torch.ones(1, device='cuda')",  # In[3] brings CUDA up
            "y = x * 2",  # In[4]
            "import nbgpumon\nwith nbgpumon.track('region'):\n    z = y + 1",  # In[5]
            "%gpumon nvtx",
            "%gpumon nvtx off",  # In[7]: its own range still closes
            "w = z + 1",
        ],
        env={"NVTX_INJECTION64_PATH": str(probe), "NBGPUMON_NVTX_LOG": str(log)},
        timeout=300,
    )
    return runs, log.read_text().splitlines() if log.exists() else []


def test_each_cell_after_cuda_is_up_and_the_region_are_ranges_in_order(traced):
    runs, log = traced
    assert all(r.error is None for r in runs), [r.text for r in runs]
    assert log == [
        "push [4] y = x * 2",
        "pop",
        "push [5] import nbgpumon",
        "push [5] region",
        "pop",
        "pop",
        "push [6] %gpumon nvtx",
        "pop",
        "push [7] %gpumon nvtx off",
        "pop",
    ]


def test_the_replies_say_what_nvtx_does(traced):
    runs, _ = traced
    assert runs[1].stdout.startswith("nbgpumon: NVTX ranges on: each cell is a range named [N]")
    assert "after torch initialises CUDA" in runs[1].stdout
    assert runs[5].stdout == "nbgpumon: NVTX ranges are on\n"
    assert runs[6].stdout == "nbgpumon: NVTX ranges off\n"


@pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys is not installed")
def test_nsys_sees_the_cell_ranges(tmp_path):
    script = tmp_path / "cells.py"
    script.write_text(
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "for cell in ['%load_ext nbgpumon', 'import torch\\nx = torch.ones(1, device=\"cuda\")',"
        " '%gpumon nvtx on', 'y = x * 2']:\n"
        "    ip.run_cell(cell, store_history=True)\n"
    )
    report = tmp_path / "cells"
    subprocess.run(
        ["nsys", "profile", "-t", "cuda,nvtx", "-o", str(report), sys.executable, str(script)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    stats = subprocess.run(
        ["nsys", "stats", "-r", "nvtx_sum", f"{report}.nsys-rep"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "] y = x * 2" in stats, stats  # (the count depends on the shell)
