"""Who holds GPU memory, on a real GPU (``pytest -m gpu``): holder bytes against torch's own
counter, the leak verdict, and the post-mortem of a real CUDA out-of-memory error."""

from __future__ import annotations

import pytest

from gpu_required import cuda_tests
from notebook_runner import run_cells

torch, pytestmark = cuda_tests()
GIB = 2**30


@pytest.fixture(scope="module")
def runs():
    return run_cells(
        [
            "%load_ext nbgpumon",
            "import torch, json, nbgpumon\n"
            "a = torch.empty(2**28, dtype=torch.uint8, device='cuda')\n"
            "b = torch.empty(2**29, dtype=torch.uint8, device='cuda')\n"
            "view, both = a[10:], [b, a]",
            "scan = nbgpumon.holders()\n"
            "print('CHECK=' + json.dumps({'device': scan.device, 'allocated': "
            "torch.cuda.memory_allocated(), 'holders': {h.name: h.bytes for h in scan.holders}}))",
            "%gpumon summary on",
            "y = torch.empty(2**30, dtype=torch.uint8, device='cuda')",
            "%gpumon summary off",
            "def grab():\n"
            "    keep = torch.empty(2**30, dtype=torch.uint8, device='cuda')\n"
            "    huge = torch.empty(16 * 2**40, dtype=torch.uint8, device='cuda')\n"
            "grab()",
            "%gpumon free",
            "print('AFTER=' + str(torch.cuda.memory_allocated()))",
        ],
        timeout=300,
    )


def test_holder_bytes_equal_the_allocators_for_known_tensors(runs):
    check = runs[2].json_after("CHECK=")
    assert check["device"] == "cuda"
    assert check["holders"] == {"a": 2**28, "b": 2**29}  # the view and the list: counted once
    assert sum(check["holders"].values()) == check["allocated"]


def test_a_cell_that_keeps_a_gib_names_its_holder(runs):
    assert "kept 1.0 GiB: y 1.0 GiB" in runs[4].stdout, runs[4].stdout


def test_a_real_out_of_memory_error_gets_a_post_mortem_naming_the_holder(runs):
    oom = runs[6]
    assert oom.error == "OutOfMemoryError"
    report = oom.stdout
    assert "nbgpumon: out of GPU memory (torch) in [7]: asked for 16.0 TiB on cuda:0" in report, (
        report
    )
    assert "  device: " in report and "free of" in report
    assert "  this kernel, torch: " in report and " reserved (" in report
    assert "traceback frame grab() local 'keep' 1.0 GiB" in report
    by_kind = next(line for line in report.splitlines() if line.startswith("  by kind: "))
    assert "outputs and tracebacks 1.0 GiB" in by_kind, report  # the failing frame's tensor
    assert "y 1.0 GiB" in report
    assert "%gpumon free: drops the stored traceback (1.0 GiB)" in report


def test_free_releases_the_traceback_and_keeps_the_variables(runs):
    assert "the stored traceback" in runs[7].stdout, runs[7].stdout
    assert int(runs[8].stdout.split("AFTER=")[1]) == 2**28 + 2**29 + GIB  # a, b and y remain
