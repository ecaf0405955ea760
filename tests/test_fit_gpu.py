"""On a real NVIDIA GPU (``pytest -m gpu``): ``nbgpumon.fit`` on a small model's forward and
backward, with torch capped by ``set_per_process_memory_fraction``, predicts a batch size that
runs, while 1.25× that size runs out of memory.

Why this is robust:

* The model is token-wise MLP blocks over (batch, 128 tokens, 1024): every activation and
  every activation gradient is the same size (512 KiB per sample), so the caching allocator
  reuses freed blocks exactly and its reserved peak stays close to the allocated peak that
  ``fit`` measures; memory is exactly linear in the batch (no cuDNN, whose workspaces are
  picked per shape). The weights and their gradients (24 MiB) exist before the measured
  calls: the warm-up call makes the gradients and cuBLAS's workspaces.
* The cap is 6 GiB above what torch reserves, so the default limit is torch's cap less what
  is allocated (H ≈ 6 GiB, far below the card's free memory), and the default margin is
  M = max(5% of H, 256 MiB) ≈ 307 MiB. The prediction P is the largest batch whose fitted
  peak is ≤ H − M, so step(P) has M (5%) for block rounding and fragmentation.
* step(1.25 P) needs about a + 1.25 (H − M − a) = 1.25 (H − M) − 0.25 a ≈ 7.1 GiB of a 6 GiB
  cap (a, the fitted intercept, is a few MiB): it runs out whenever M < H/5 − a/5, which the
  default margin keeps (5% < 20%) for any headroom over 1.3 GiB. The 1.1 GiB it is over by is
  far more than any fitting error at R² ≥ 0.98 on a line this exact.
* The sizes tried (64 to 256, at most about 1 GiB) are far below P (about 1700): the
  prediction is an extrapolation, as in real use, and the whole GPU work is well under 10 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpu_required import cuda_tests
from required import CUPY_JAX, import_or_skip

torch, pytestmark = cuda_tests()
GIB = 2**30

SCRIPT = r"""
import gc, json, torch, nbgpumon

torch.manual_seed(0)
blocks = []
for _ in range(3):
    blocks += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
model = torch.nn.Sequential(*blocks).cuda()

def step(batch):
    x = torch.randn(batch, 128, 1024, device="cuda")
    model(x).square().mean().backward()
    torch.cuda.synchronize()

total = torch.cuda.get_device_properties(0).total_memory
cap = torch.cuda.memory_reserved(0) + 6 * 2**30
torch.cuda.set_per_process_memory_fraction(cap / total, 0)

result = nbgpumon.fit(step, sizes=(64, 128, 192, 256))
print(repr(result))
torch_fit, prediction = result.fits["torch"], result.prediction["torch"]
out = {
    "ok": torch_fit.ok, "r2": torch_fit.r2, "slope": torch_fit.slope,
    "exact": [row.exact["torch"] for row in result.table],
    "size": prediction.size, "limit": prediction.limit, "margin": prediction.margin,
    "note": prediction.limit_note, "overall": result.size, "cap": cap,
    "allocated": torch.cuda.memory_allocated(0),
}
gc.collect()
step(prediction.size)
out["predicted_ran"] = True
gc.collect()
try:
    step(int(1.25 * prediction.size))
    out["bigger"] = "ran"
except torch.OutOfMemoryError:
    out["bigger"] = "OutOfMemoryError"
print("FIT=" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def fitted():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("FIT="))
    return json.loads(line[4:]), done.stdout


def test_the_fit_of_a_forward_and_backward_is_a_good_line_of_exact_peaks(fitted):
    out, text = fitted
    assert out["ok"] and out["r2"] > 0.999, text
    assert all(out["exact"])
    assert 2 * 2**20 < out["slope"] < 8 * 2**20  # a few MiB per sample


def test_the_default_limit_is_torchs_cap_less_what_is_allocated_less_the_margin(fitted):
    out, text = fitted
    # (torch keeps the cap as a fraction of the total: back in bytes, it may be off by a few)
    assert out["limit"] == pytest.approx(out["cap"] - out["allocated"], abs=2**20), text
    assert "set_per_process_memory_fraction" in out["note"]
    assert out["margin"] == max(int(0.05 * out["limit"]), 256 * 2**20)


def test_the_predicted_batch_runs_and_an_extrapolation_from_far_below_it(fitted):
    out, text = fitted
    assert out["size"] > 4 * 256, text  # an extrapolation, as in real use
    # host memory's churn beside the GPU allocator does not decide the size
    assert out["overall"] == out["size"]
    assert out["predicted_ran"] is True


def test_a_batch_1_25_times_the_prediction_runs_out_of_memory(fitted):
    out, text = fitted
    assert out["bigger"] == "OutOfMemoryError", text


FRAMEWORK_STEP = {
    "cupy": (
        "import cupy as cp\n"
        "def step(n):\n"
        "    cp.ones((n, 1 << 20), dtype=cp.uint8)\n"
        "    cp.cuda.Device().synchronize()\n"
    ),
    "jax": (
        "import jax.numpy as jnp\n"
        "def step(n):\n"
        "    jnp.ones((n, 1 << 20), dtype=jnp.uint8).block_until_ready()\n"
    ),
}


@pytest.mark.parametrize("framework", ["cupy", "jax"])
def test_fit_on_cupy_and_jax_fits_their_exact_peaks(framework):
    """n MiB a call: CuPy's peaks are exact (fit arms its hook), JAX's from the second size on
    (its high-water mark can't be reset, so the warm-up's size reads ≥ and is left out)."""
    import_or_skip(framework, CUPY_JAX)
    code = FRAMEWORK_STEP[framework] + (
        "import json, nbgpumon\n"
        "r = nbgpumon.fit(step, sizes=(64, 128, 192, 256, 320))\n"
        "print(repr(r))\n"
        f"fit = r.fits[{framework!r}]\n"
        "print('FIT=' + json.dumps({'ok': fit.ok, 'slope': fit.slope, 'reason': fit.reason,\n"
        f"    'exact': [row.exact[{framework!r}] for row in r.table],\n"
        f"    'size': r.prediction[{framework!r}].size}}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("FIT="))
    out = json.loads(line[4:])
    assert out["ok"], done.stdout
    assert out["slope"] == pytest.approx(2**20, rel=0.02)  # 1 MiB per size
    expected = [True] * 5 if framework == "cupy" else [False] + [True] * 4
    assert out["exact"] == expected, done.stdout
    assert out["size"] > 320
