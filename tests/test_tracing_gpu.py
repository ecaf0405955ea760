"""On a real NVIDIA GPU (``pytest -m gpu``): ``%gpumon trace`` in a real kernel attributes what
each cell left behind to the cell and line that allocated it."""

from __future__ import annotations

import pytest

from gpu_required import cuda_tests
from notebook_runner import RECORDS_CELL, keep_gpu_cells, run_cells

torch, pytestmark = cuda_tests()
KEEP_1GIB = "import torch\ny = torch.empty(2**30, dtype=torch.uint8, device='cuda')"
PREFIX = "nbgpumon trace: "
PEAK = "nbgpumon trace, freed after its peak: "
NET = (
    "net = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),\n"
    "                          torch.nn.Linear(4096, 4096)).cuda()\n"
    "xb = torch.randn(8192, 4096, device='cuda')"
)


def _traced(run, prefix: str = PREFIX) -> list[str]:
    return [line[len(prefix) :] for line in run.stdout.splitlines() if line.startswith(prefix)]


@pytest.fixture(scope="module")
def runs():
    cells = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon trace on\nimport sys\nprint('TORCH', 'torch' in sys.modules)",  # In[2]
            "import torch\nx0 = torch.empty(2**20, dtype=torch.uint8, device='cuda')",  # In[3]
            "%gpumon status",  # In[4]
            KEEP_1GIB,  # In[5]
            "def make(n):\n    return torch.empty(n, dtype=torch.uint8, device='cuda')",  # In[6]
            "z = make(2**29)",  # In[7]
            "t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t",  # In[8]
            KEEP_1GIB,  # In[9]: the same text as In[5], so the same cell file
            NET,  # In[10]
            "loss = net(xb).square().mean()\nloss.backward()\ndel loss",  # In[11]
            "%gpumon trace off\nprint('HISTORY', torch._C._cuda_isHistoryEnabled())",  # In[12]
            RECORDS_CELL,
            "%gpumon explain 11",
        ],
        timeout=300,
    )
    return keep_gpu_cells("tracing_gpu_cells.json", cells)  # (the docs' trace example)


def test_trace_on_before_cuda_arms_without_importing_torch(runs):
    lines = runs[1].stdout.splitlines()
    assert lines[0].startswith("nbgpumon: allocation tracing armed")
    assert lines[1] == "TORCH False"


def test_recording_starts_after_the_cell_that_initialised_cuda(runs):
    assert _traced(runs[2]) == []  # that cell itself is not traced
    assert "allocation tracing on" in runs[3].text


def test_a_kept_tensor_is_attributed_to_its_cell_and_line_with_exact_bytes(runs):
    assert _traced(runs[4]) == [
        "[5] line 2: y = torch.empty(2**30, dtype=torch.uint8, device='cuda') — 1.0 GiB"
    ]


def test_a_function_from_an_earlier_cell_names_both_cells(runs):
    assert _traced(runs[5]) == []  # defining it allocates nothing
    assert _traced(runs[6]) == [
        "[7] line 1 → [6] line 2: return torch.empty(n, dtype=torch.uint8, device='cuda') — 512 MiB"
    ]


def test_memory_freed_within_the_cell_is_not_reported(runs):
    assert _traced(runs[7]) == []


def test_what_a_cells_peak_held_and_it_freed_is_named_by_its_line(runs):
    assert _traced(runs[7], PEAK) == [
        "[8] line 1: t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t — 1.0 GiB"
    ]
    assert _traced(runs[4], PEAK) == []  # it kept what it made: its peak is its end


def test_a_training_steps_activations_are_named_by_the_forward_line(runs):
    peak = _traced(runs[10], PEAK)
    assert any(line.startswith("[11] line 1: loss = net(xb).square().mean() — ") for line in peak)
    said = runs[13].text
    assert "what the peak held and the cell freed, by the line that allocated it:" in said
    assert "    [11] line 1: loss = net(xb).square().mean() — " in said, said
    records = {r["execution_count"]: r for r in runs[12].json_after("RECORDS=")}
    assert records[11]["traced_peak"], records[11]


def test_a_rerun_of_identical_text_is_attributed_to_the_new_count(runs):
    assert [line.split(":")[0] for line in _traced(runs[8])] == ["[9] line 2"]


def test_the_ledger_keeps_the_traced_lines_and_trace_off_stops_torchs_recorder(runs):
    records = {r["execution_count"]: r for r in runs[12].json_after("RECORDS=")}
    assert records[5]["traced"] == "\n".join(_traced(runs[4]))
    assert runs[11].stdout.splitlines() == ["nbgpumon: allocation tracing off", "HISTORY False"]
