"""On a real NVIDIA GPU (``pytest -m gpu``): two recorded runs where one cell keeps three
times the CUDA memory; the comparison flags that cell by its GPU figures, per framework too."""

from __future__ import annotations

import nbgpumon

from gpu_required import cuda_tests
from notebook_runner import run_cells

torch, pytestmark = cuda_tests()
MIB = 2**20
KEEP_A = "keep = torch.empty(256 * 2**20, dtype=torch.uint8, device='cuda')"
KEEP_B = "keep = torch.empty(3 * 256 * 2**20, dtype=torch.uint8, device='cuda')"
TRANSIENT = "tmp = torch.empty(512 * 2**20, dtype=torch.uint8, device='cuda'); del tmp"


def _run(path, keep: str) -> None:
    run_cells(
        [
            "%load_ext nbgpumon",
            f"%gpumon record {path}",
            "import torch\nfirst = torch.empty(1, device='cuda')  # CUDA up before the cells",
            keep,
            TRANSIENT,
            "%gpumon record off",
        ],
        timeout=300,
    )


def test_the_cell_keeping_three_times_the_cuda_memory_is_flagged_by_its_gpu_figures(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    _run(a, KEEP_A)
    _run(b, KEEP_B)
    comparison = nbgpumon.compare(a, b)
    flagged = [c for c in comparison.regressions if any("GPU" in r for r in c.reasons)]
    assert [c.label for c in flagged] == [KEEP_B]
    (change,) = flagged
    assert "GPU kept ×3.0 (+512 MiB)" in change.reasons
    assert "GPU peak ×3.0 (+512 MiB)" in change.reasons
    assert change.b.frameworks["torch"] == (768 * MIB, 768 * MIB)
    frame = comparison.frame()
    row = frame[frame.label == KEEP_B].iloc[0]
    assert (row.torch_kept_a, row.torch_kept_b, row.torch_kept_change) == (
        256 * MIB, 768 * MIB, 512 * MIB,
    )  # fmt: skip
    transient = frame[frame.label == TRANSIENT].iloc[0]
    assert transient.torch_peak_a == transient.torch_peak_b == 512 * MIB
    assert transient.torch_kept_a == transient.torch_kept_b == 0
    # one framework: its columns would repeat the GPU ones, so the table shows the GPU ones
    table = repr(comparison)
    assert "GPU kept" in table and "torch peak" not in table
