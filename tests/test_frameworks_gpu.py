"""On a real GPU (``pytest -m gpu``): JAX's and CuPy's allocators in the ledger, the holders,
the status and the post-mortem, and all three frameworks in one notebook. Each kernel first
shows that importing the framework under nbgpumon makes no CUDA context (the driver's own
answer, and NVML's process list) and starts no JAX backend."""

from __future__ import annotations

import re

import pytest

from notebook_runner import RECORDS_CELL, WAIT_FOR_ALLOCATOR_READS, cells_by_label, run_cells
from required import CUPY_JAX, import_or_skip

pytestmark = pytest.mark.gpu
GIB = 2**30


@pytest.fixture(scope="module", autouse=True)
def _cupy_and_jax():
    """Each test skips without them, or fails where scripts/gpu requires them (a fixture, not
    an import at the top: a failed collection would stop every other GPU test too)."""
    import_or_skip("jax", CUPY_JAX)
    import_or_skip("cupy", CUPY_JAX)


# Whether this kernel has a CUDA context on GPU 0: the driver's primary-context state and
# NVML's process list (the two must agree once one exists, which shows the check can see it).
CONTEXT = (
    "import os, pynvml\nfrom nbgpumon._sources.cuda_contexts import CudaContexts as _C\n"
    "pynvml.nvmlInit()\n_h = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
    "_p = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(_h)]\n"
    "print('CONTEXT', _C().active(0), os.getpid() in _p)"
)
BACKENDS = "from jax._src import xla_bridge as _xb\nprint('BACKENDS', sorted(_xb._backends))"


def _cells(run) -> dict[str, dict]:
    return cells_by_label(run.json_after("RECORDS="))


@pytest.fixture(scope="module")
def jax_run():
    return run_cells(
        [
            "%load_ext nbgpumon",  # 0
            "import jax\nimport jax.numpy as jnp",
            WAIT_FOR_ALLOCATOR_READS,
            CONTEXT,
            BACKENDS,
            "x = jnp.ones((2**28,), dtype=jnp.float32); x.block_until_ready()",  # 5: kept 1 GiB
            "t = jnp.ones((2**29,), dtype=jnp.float32); t.block_until_ready(); del t",  # 6
            "t = jnp.ones((2**27,), dtype=jnp.float32); t.block_until_ready(); del t",  # 7
            CONTEXT,
            "%gpumon holders",
            "%gpumon status",  # 10
            "%gpumon advise",
            "huge = jnp.ones((2**40,), dtype=jnp.float32).block_until_ready()",  # 12: OOM
            RECORDS_CELL,
        ],
        timeout=300,
    )


def test_import_jax_makes_no_context_and_starts_no_backend(jax_run):
    assert jax_run[2].stdout.split() == ["TICKS", "True"]
    assert jax_run[3].stdout.split() == ["CONTEXT", "False", "False"], jax_run[3].text
    assert jax_run[4].stdout.strip() == "BACKENDS []"
    assert jax_run[8].stdout.split() == ["CONTEXT", "True", "True"]  # the check sees one


def test_a_jax_array_kept_is_exactly_one_gib_and_named(jax_run):
    cells = _cells(jax_run[-1])
    kept = cells["x = jnp.ones((2**28,), dtype=jnp.float32); x.block_until_ready()"]
    assert kept["gpu0.jax.retained"] == GIB and kept["retained"] == GIB
    assert kept["gpu0.jax.peak_exact"] is True
    holders = jax_run[9].text
    assert "x  " in holders and "1.0 GiB" in holders, holders


def test_a_transient_jax_peak_is_exact_when_it_sets_a_high_else_a_lower_bound(jax_run):
    cells = _cells(jax_run[-1])
    high = cells["t = jnp.ones((2**29,), dtype=jnp.float32); t.block_until_ready(); del t"]
    assert high["gpu0.jax.retained"] == 0
    assert high["gpu0.jax.peak_exact"] is True
    # x's 1 GiB and t's 2 GiB, and what JAX itself held meanwhile (256 B on the H200)
    assert 3 * GIB <= high["gpu0.jax.peak_allocated"] <= 3 * GIB + 2**20
    low = cells["t = jnp.ones((2**27,), dtype=jnp.float32); t.block_until_ready(); del t"]
    assert low["gpu0.jax.peak_exact"] is False
    assert GIB <= low["gpu0.jax.peak_allocated"] <= GIB + GIB // 2


def test_jax_status_advice_and_post_mortem(jax_run):
    assert "JAX: active: cuda:0 1.0 GiB in use" in jax_run[10].text, jax_run[10].text
    assert "JAX preallocation" in jax_run[11].text, jax_run[11].text  # the default 75% pool
    oom = jax_run[12]
    assert oom.error is not None
    report = oom.stdout
    assert "nbgpumon: out of GPU memory (JAX) in [13]: asked for 4.0 TiB on cuda:0" in report, (
        report
    )
    assert "held by: x 1.0 GiB" in report
    assert "this kernel, JAX: 1.0 GiB in use" in report


@pytest.fixture(scope="module")
def cupy_run():
    return run_cells(
        [
            "%load_ext nbgpumon",  # 0
            "import cupy as cp",
            WAIT_FOR_ALLOCATOR_READS,
            CONTEXT,
            "x = cp.ones(2**28, dtype=cp.float32)",  # 4: kept 1 GiB
            "t = cp.ones(2**29, dtype=cp.float32); del t",  # 5: 2 GiB transient, sampled peak
            "v = x[::2]",
            "%gpumon holders",
            "%gpumon free",  # 8: the 2 GiB block goes back to the driver
            "%gpumon status",
            "huge = cp.ones(2**40, dtype=cp.float32)",  # 10: out of memory
            CONTEXT,
            "%config GPUMon.cupy_peak_hook = True",
            "t = cp.ones(2**29, dtype=cp.float32); del t  # hooked",  # 13: exact peak
            "%gpumon status",
            RECORDS_CELL,
        ],
        timeout=300,
    )


def test_import_cupy_makes_no_context(cupy_run):
    assert cupy_run[2].stdout.split() == ["TICKS", "True"]
    assert cupy_run[3].stdout.split() == ["CONTEXT", "False", "False"], cupy_run[3].text
    assert cupy_run[11].stdout.split() == ["CONTEXT", "True", "True"]


def test_a_cupy_array_kept_is_exactly_one_gib_and_its_view_counts_once(cupy_run):
    cells = _cells(cupy_run[-1])
    kept = cells["x = cp.ones(2**28, dtype=cp.float32)"]
    assert kept["gpu0.cupy.retained"] == GIB and kept["retained"] == GIB
    sampled = cells["t = cp.ones(2**29, dtype=cp.float32); del t"]
    assert sampled["gpu0.cupy.retained"] == 0
    assert sampled["gpu0.cupy.peak_exact"] is False  # no hook by default: a lower bound
    assert GIB <= sampled["gpu0.cupy.peak_allocated"] <= 3 * GIB
    hooked = cells["t = cp.ones(2**29, dtype=cp.float32); del t  # hooked"]
    assert hooked["gpu0.cupy.peak_exact"] is True
    assert hooked["gpu0.cupy.peak_allocated"] == 3 * GIB
    assert "exact for the kernel's thread (CuPy memory hook)" in cupy_run[14].text
    holders = cupy_run[7].text
    assert "1 holder," in holders and "1.0 GiB" in holders, holders


def test_cupy_free_status_and_post_mortem(cupy_run):
    freed = cupy_run[8].stdout
    assert "reserved \u22122.0 GiB" in freed, freed
    assert "CuPy: active: cuda:0 1.0 GiB in use, 1.0 GiB reserved" in cupy_run[9].text
    oom = cupy_run[10]
    assert oom.error == "OutOfMemoryError"
    assert "nbgpumon: out of GPU memory (CuPy) in [11]: asked for 4.0 TiB on cuda:0" in (
        oom.stdout
    ), oom.stdout
    assert "held by: x 1.0 GiB" in oom.stdout


def test_torch_jax_and_cupy_in_one_notebook_each_get_their_own_figures():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon summary on",
            "import torch, jax.numpy as jnp, cupy as cp",
            "a = torch.empty(2**30, dtype=torch.uint8, device='cuda')\n"
            "b = jnp.ones((2**28,), dtype=jnp.float32); b.block_until_ready()\n"
            "c = cp.ones(2**28, dtype=cp.float32)",
            "%gpumon cells",
            RECORDS_CELL,
        ],
        env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
        timeout=300,
    )
    line = runs[3].stdout
    assert "torch: +1.0 GiB alloc, peak 1.0 GiB, kept 1.0 GiB" in line, line
    # JAX's pool grows in chunks of its own choosing: the line says so when it outgrew the array
    assert re.search(r"JAX: peak 1\.0 GiB, (pool \+[\d.]+ [GM]iB, )?kept 1\.0 GiB", line), line
    assert "CuPy: peak ≥1.0 GiB, kept 1.0 GiB" in line, line  # sampled: no hook by default
    (cell,) = [r for r in runs[-1].json_after("RECORDS=") if r["label"].startswith("a = ")]
    assert [cell[f"gpu0.{f}.retained"] for f in ("torch", "jax", "cupy")] == [GIB] * 3
    assert "torch 1.0 GiB · JAX 1.0 GiB · CuPy 1.0 GiB" in runs[4].text
