"""What the advisor knows of JAX: its preallocated pool."""

from __future__ import annotations

from ..advice import PoolAdvice

GIB = 2**30

PREALLOCATION = PoolAdvice(
    topic="JAX preallocation",
    absent="JAX preallocation",
    rank=50,
    test="most",
    min_idle=4 * GIB,  # the pool at least this far above its arrays ...
    min_times=4,  # ... and at least 4x what they use
    evidence="JAX's pool held {pool} while its arrays used at most {used}",
    advice="JAX takes 75% of the GPU when it starts: set XLA_PYTHON_CLIENT_PREALLOCATE="
    "false (the pool grows as needed) or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION "
    "(e.g. .3) before jax starts (restart the kernel) when torch, CuPy or another "
    "process needs the memory",
)
