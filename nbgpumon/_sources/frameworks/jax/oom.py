"""JAX's out-of-memory errors: XLA's ``RESOURCE_EXHAUSTED`` and its fixes."""

from __future__ import annotations

import re

from ..out_of_memory import OutOfMemory


def _claims(exc: BaseException) -> bool:
    """JAX's ``XlaRuntimeError`` / ``JaxRuntimeError`` for memory: RESOURCE_EXHAUSTED."""
    text = str(exc)
    return "RESOURCE_EXHAUSTED" in text and "memory" in text.lower()


OOM = OutOfMemory(
    claims=_claims,
    requested=(
        re.compile(r"trying to allocate ([\d,]+) bytes"),  # "…trying to allocate 4294967296 bytes"
        # JAX 0.11: "…while trying to allocate 4.00TiB with allocator GPU_0_bfc on device 0."
        re.compile(r"trying to allocate ([\d.]+) ?([KMGT]i?B|B)\b"),
    ),
    device=(re.compile(r"on device (\d+)"),),
    wording="RESOURCE_EXHAUSTED",
    idle_fix="JAX's pool holds {size} it does not use (it preallocates 75% of the GPU): "
    "restart with XLA_PYTHON_CLIENT_PREALLOCATE=false, or cap it with "
    "XLA_PYTHON_CLIENT_MEM_FRACTION=.3",
    general_fix="a smaller batch, bfloat16 (jnp.bfloat16), jax.checkpoint on large blocks, or "
    "gradient accumulation",
)
