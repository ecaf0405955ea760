"""The real JAX (its CPU build) in a real kernel under nbgpumon: importing jax and working on
the CPU leaves its backends to the user's code, and every magic stays off them. JAX's own
state is the witness: ``jax._src.xla_bridge._backends`` is empty until a computation starts
one, and ``jax.devices()`` would have filled it."""

from __future__ import annotations

import pytest

from notebook_runner import WAIT_FOR_ALLOCATOR_READS, run_cells

pytest.importorskip("jax")

BACKENDS = "from jax._src import xla_bridge\nprint('backends', sorted(xla_bridge._backends))"


def test_import_jax_and_every_magic_leave_its_backends_uninitialised_then_cpu_work_is_seen():
    out = run_cells(
        [
            "%load_ext nbgpumon",
            "import jax\nimport jax.numpy as jnp",
            WAIT_FOR_ALLOCATOR_READS,
            "%gpumon status",
            "%gpumon",
            "%gpumon holders",
            "%gpumon free",
            "%gpumon cells",
            "%gpumon advise",
            BACKENDS,
            "x = jnp.ones((1024, 256), dtype=jnp.float32)\nx.block_until_ready()\n" + BACKENDS,
            WAIT_FOR_ALLOCATOR_READS,
            "%gpumon status",
            "%gpumon holders host",
        ],
        timeout=240,
    )
    assert out[2].stdout.split() == ["TICKS", "True"], out[2].text
    status_before = out[3].text
    assert "JAX: jax imported, no backend initialised yet (not read)" in status_before
    assert all(o.error is None for o in out), [o.text for o in out if o.error]
    assert out[9].stdout.strip() == "backends []", out[9].text  # no magic started a backend
    assert "backends ['cpu']" in out[10].stdout  # the user's computation did
    assert out[11].stdout.split() == ["TICKS", "True"]
    assert "JAX: jax active on cpu only: no GPU backend to read" in out[12].text
    assert "x  " in out[13].text and "1.0 MiB" in out[13].text, out[13].text
