"""The breakdown on a real GPU (``pytest -m gpu``): GPT-2 small built from its config (no
download), fp32, AdamW, after one step, in a real kernel. Parameters, gradients and optimizer
state each equal, to the byte, the sum over their unique CUDA storages as torch reports them;
torch's cache equals reserved − allocated; the categories add up to the driver's figure for
this process, read by the test itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from notebook_runner import run_cells

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

TRUTH = """\
import os, pynvml
def cuda_bytes(tensors):
    seen = {}
    for t in tensors:
        if torch.is_tensor(t) and t.is_cuda:
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())
e = nbgpumon.explain()[0]
truth = {
    'parameters': cuda_bytes(model.parameters()),
    'gradients': cuda_bytes(p.grad for p in model.parameters()),
    'optimizer state': cuda_bytes(v for s in opt.state.values() for v in s.values()),
    'buffers': cuda_bytes(model.buffers()),
    'arrays held by variables': cuda_bytes([batch]),
    'cache': torch.cuda.memory_reserved() - torch.cuda.memory_allocated(),
}
pynvml.nvmlInit()
handle = pynvml.nvmlDeviceGetHandleByIndex(e.index)
mine = [p for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid == os.getpid()]
truth['driver'] = sum(p.usedGpuMemory for p in mine)
print('EXPLAINED=' + json.dumps({'categories': e.categories, 'total': e.total,
                                 'measured': e.measured, 'notes': list(e.notes),
                                 'truth': truth}))
"""


@pytest.fixture(scope="module")
def runs():
    cells = [
        "%load_ext nbgpumon",
        "import json, torch, nbgpumon\n"
        "from transformers import GPT2Config, GPT2LMHeadModel\n"
        "torch.manual_seed(0)\n"
        "model = GPT2LMHeadModel(GPT2Config()).cuda()\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
        "batch = torch.randint(0, 50257, (4, 256), device='cuda')",
        "loss = model(batch, labels=batch).loss\nloss.backward()\nopt.step()\ndel loss",
        TRUTH,
        "%gpumon explain",
    ]
    runs = run_cells(cells, timeout=600)
    out = Path(os.environ.get("NBGPUMON_GPU_OUT", "/tmp"))
    (out / "explain_gpu_cells.json").write_text(
        json.dumps([{"source": r.source, "text": r.text} for r in runs], indent=1)
    )
    return runs


def test_gpt2_after_a_step_is_explained_to_the_byte(runs):
    got = runs[3].json_after("EXPLAINED=")
    categories, truth = got["categories"], got["truth"]
    for name in ("parameters", "gradients", "optimizer state", "buffers"):
        assert categories.get(name, 0) == truth[name], (name, got)
    assert categories["arrays held by variables"] == truth["arrays held by variables"]
    assert categories.get("torch cache (reserved, unused)", 0) == truth["cache"], got
    assert sum(categories.values()) == got["total"] == truth["driver"], got
    assert got["measured"] == "the driver's figure for this process"


def test_explain_shows_the_breakdown_in_the_cell(runs):
    said = runs[4].text
    assert said.startswith("nbgpumon explain: this kernel's GPU memory by what it is"), said
    assert "  parameters " in said and "  CUDA context and libraries " in said, said
