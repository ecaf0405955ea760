"""The breakdown on a real GPU (``pytest -m gpu``), each case in a real kernel of its own.
GPT-2 small built from its config (no download), fp32, AdamW, after one step: parameters,
gradients and optimizer state each equal, to the byte, the sum over their unique CUDA storages
as torch reports them; torch's cache equals reserved − allocated; the step cell's own record
says the same at its end, and its peak split adds up to its exact peak. CuPy's arrays and pool,
JAX's, and a flax nnx model with its optax AdamW state likewise. Every case adds up to the
driver's figure for this process, read by the test itself."""

from __future__ import annotations

import pytest

from gpu_required import cuda_tests
from notebook_runner import keep_gpu_cells, keep_gpu_file, run_cells
from required import CUPY_JAX, import_or_skip

torch, pytestmark = cuda_tests()

TRUTH = """\
import os, pynvml
from nbgpumon._views.memory.explain import measured_words, note_words
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
    'arrays held by variables (torch)': cuda_bytes([batch]),
    'cache': torch.cuda.memory_reserved() - torch.cuda.memory_allocated(),
}
pynvml.nvmlInit()
handle = pynvml.nvmlDeviceGetHandleByIndex(e.index)
mine = [p for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid == os.getpid()]
truth['driver'] = sum(p.usedGpuMemory for p in mine)
print('EXPLAINED=' + json.dumps({'categories': e.categories, 'total': e.total,
                                 'measured': measured_words(e),
                                 'notes': [note_words(n) for n in e.notes],
                                 'truth': truth}))
"""


@pytest.fixture(scope="module")
def runs():
    pytest.importorskip("transformers")
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
        "%gpumon advise",
        STEP_CELL,
        "%gpumon explain 3",
        "lr = 0.1",  # In[9]: allocates nothing, binds no GPU memory
        LR_CELL,
    ]
    return keep_gpu_cells("explain_gpu_cells.json", run_cells(cells, timeout=600))


# the step cell's own record (In[3]), as the ledger keeps it
STEP_CELL = """from nbgpumon._views.memory.explain import kinds_note_words
_d = next(r for r in nbgpumon.cells() if r.execution_count == 3).devices[0]
print('CELL=' + json.dumps({'after': dict(_d.kinds_after), 'kept': _d.kept_by_kind,
    'split': _d.peak_by_kind, 'peak': _d.peak_allocated, 'exact': _d.peak_exact,
    'allocated': _d.allocated_after, 'note': kinds_note_words(_d.kinds_note)}))
"""


LR_CELL = """from nbgpumon._views.memory.explain import kinds_note_words
_d = next(r for r in nbgpumon.cells() if r.execution_count == 9).devices[0]
print('LR=' + json.dumps({'note': kinds_note_words(_d.kinds_note), 'before': dict(_d.kinds_before),
    'after': dict(_d.kinds_after), 'handed_out': _d.allocated_total}))
"""


def test_a_cell_that_allocates_nothing_and_binds_a_float_is_carried_over(runs):
    got = keep_gpu_file("explain_gpu_lr_cell.json", runs[9].json_after("LR="))
    assert got["handed_out"] == 0, got  # torch's own count for the cell
    assert got["note"] == "carried over: the cell allocated nothing and bound no GPU memory"
    assert got["after"] == got["before"] and got["after"]["parameters"] > 0, got


def test_gpt2_after_a_step_is_explained_to_the_byte(runs):
    got = runs[3].json_after("EXPLAINED=")
    categories, truth = got["categories"], got["truth"]
    for name in ("parameters", "gradients", "optimizer state", "buffers"):
        assert categories.get(name, 0) == truth[name], (name, got)
    assert (
        categories["arrays held by variables (torch)"] == truth["arrays held by variables (torch)"]
    )
    assert categories.get("torch cache (reserved, unused)", 0) == truth["cache"], got
    assert sum(categories.values()) == got["total"] == truth["driver"], got
    assert got["measured"] == "the driver's figure for this process"


def test_the_step_cells_record_says_the_same_at_its_end_and_splits_its_exact_peak(runs):
    truth = runs[3].json_after("EXPLAINED=")["truth"]
    cell = keep_gpu_file("explain_gpu_step_cell.json", runs[6].json_after("CELL="))
    for name in ("parameters", "gradients", "optimizer state", "buffers"):
        assert cell["after"].get(name, 0) == truth[name], (name, cell)
    assert (
        cell["after"]["arrays held by variables (torch)"]
        == truth["arrays held by variables (torch)"]
    )
    assert sum(cell["after"].values()) == cell["allocated"], cell
    # the step made the gradients and Adam's state; it kept them
    assert cell["kept"]["gradients"] == truth["gradients"], cell
    assert cell["kept"]["optimizer state"] == truth["optimizer state"], cell
    assert cell["exact"] and sum(cell["split"].values()) == cell["peak"], cell
    assert cell["split"]["activations and temporaries"] == cell["peak"] - cell["allocated"] > 0
    said = runs[7].text
    assert said.startswith("nbgpumon explain [3]: the cell's GPU memory by what it is"), said
    assert "  kept since its start: +" in said and " at its peak: " in said, said


def test_advise_names_adams_state_at_twice_the_parameters(runs):
    said = runs[5].text
    assert "optimizer state: gpu0 " in said, said
    assert "the optimizer state holds 949 MiB, 2.0× the parameters (475 MiB)" in said, said


def test_explain_shows_the_breakdown_in_the_cell(runs):
    said = runs[4].text
    assert said.startswith("nbgpumon explain: this kernel's GPU memory by what it is"), said
    assert "  parameters " in said and "  CUDA context and libraries " in said, said


DRIVER = """\
import os, pynvml
pynvml.nvmlInit()
_h = pynvml.nvmlDeviceGetHandleByIndex(e.index)
driver = sum(p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(_h)
             if p.pid == os.getpid())
"""


def test_cupy_arrays_and_its_pool_are_explained_to_the_byte():
    import_or_skip("cupy", CUPY_JAX)
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import json, cupy as cp, nbgpumon\n"
            "x = cp.ones(2**28, dtype=cp.float32)\n"
            "t = cp.ones(2**27, dtype=cp.float32); del t\n"  # 512 MiB back to the pool
            "cp.cuda.Device(0).synchronize()",
            "e = nbgpumon.explain()[0]\npool = cp.get_default_memory_pool()\n"
            + DRIVER
            + "print('EXPLAINED=' + json.dumps({'categories': e.categories, 'total': e.total,\n"
            "    'arrays': x.data.mem.size, 'unused': pool.total_bytes() - pool.used_bytes(),\n"
            "    'driver': driver}))",
        ],
        timeout=300,
    )
    got = keep_gpu_file("explain_gpu_cupy.json", runs[2].json_after("EXPLAINED="))
    assert got["categories"]["arrays held by variables (CuPy)"] == got["arrays"] == 2**30, got
    assert got["categories"]["CuPy pool (reserved, unused)"] == got["unused"], got
    assert sum(got["categories"].values()) == got["total"] == got["driver"], got


def test_jax_arrays_and_its_pool_are_explained_and_add_up_to_the_drivers_figure():
    import_or_skip("jax", CUPY_JAX)
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import json, jax, jax.numpy as jnp, nbgpumon\n"
            "x = jnp.ones((2**28,), dtype=jnp.float32).block_until_ready()",
            "e = nbgpumon.explain()[0]\n" + DRIVER + "s = x.devices().pop().memory_stats()\n"
            "reserved = s.get('pool_bytes') or s.get('bytes_reserved') or s['bytes_in_use']\n"
            "print('EXPLAINED=' + json.dumps({'categories': e.categories, 'total': e.total,\n"
            "    'unused': reserved - s['bytes_in_use'], 'driver': driver}))",
        ],
        timeout=300,
    )
    got = keep_gpu_file("explain_gpu_jax.json", runs[2].json_after("EXPLAINED="))
    assert got["categories"]["arrays held by variables (JAX)"] == 2**30, got
    assert got["categories"].get("JAX pool (reserved, unused)", 0) == got["unused"], got
    assert sum(got["categories"].values()) == got["total"] == got["driver"], got


FLAX_BUILD = """\
import json, jax, jax.numpy as jnp, optax, nbgpumon
from flax import nnx
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.up = nnx.Linear(4096, 16384, rngs=rngs)
        self.down = nnx.Linear(16384, 4096, rngs=rngs)
    def __call__(self, x):
        return self.down(jax.nn.relu(self.up(x)))
model = MLP(nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
x = jnp.ones((1024, 4096))
@nnx.jit
def step(model, opt, x):
    loss, grads = nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(model)
    opt.update(model, grads)
    return loss
"""

FLAX_TRUTH = """\
def jax_bytes(tree):
    seen = {}
    for leaf in jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, jax.Array):
            for shard in leaf.addressable_shards:
                if shard.device.platform != 'cpu':
                    seen[shard.data.unsafe_buffer_pointer()] = shard.data.nbytes
    return sum(seen.values())
e = nbgpumon.explain()[0]
_c = next(r for r in nbgpumon.cells() if r.execution_count == 3).devices[0]
"""


def test_a_flax_nnx_model_and_its_optax_state_are_explained_and_add_up():
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            FLAX_BUILD,
            "float(step(model, opt, x))",
            FLAX_TRUTH
            + DRIVER
            + "print('EXPLAINED=' + json.dumps({'categories': e.categories, 'total': e.total,\n"
            "    'parameters': jax_bytes(nnx.state(model, nnx.Param)),\n"
            "    'state': jax_bytes(nnx.state(opt, nnx.training.optimizer.OptState)),\n"
            "    'driver': driver, 'cell': dict(_c.kinds_after), 'split': _c.peak_by_kind,\n"
            "    'peak': _c.peak_allocated, 'allocated': _c.allocated_after}))",
            "%gpumon explain 3",
        ],
        timeout=300,
    )
    keep_gpu_cells("explain_gpu_flax_cells.json", runs)
    got = keep_gpu_file("explain_gpu_flax.json", runs[3].json_after("EXPLAINED="))
    assert got["categories"]["parameters"] == got["parameters"] > 0, got
    assert got["categories"]["optimizer state"] == got["state"] >= 2 * got["parameters"], got
    assert sum(got["categories"].values()) == got["total"] == got["driver"], got
    assert got["cell"]["parameters"] == got["parameters"], got  # the step cell's end
    assert got["cell"]["optimizer state"] == got["state"], got
    assert sum(got["cell"].values()) == got["allocated"], got
    assert sum(got["split"].values()) == got["peak"], got
