"""CuPy's out-of-memory errors: ``cupy.cuda.memory.OutOfMemoryError`` and its fixes."""

from __future__ import annotations

import re

from ..out_of_memory import OutOfMemory


def _claims(exc: BaseException) -> bool:
    """CuPy's ``OutOfMemoryError``: a ``MemoryError``, but of the GPU."""
    module = type(exc).__module__ or ""
    named = isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"
    return module.startswith("cupy") and named


OOM = OutOfMemory(
    claims=_claims,
    requested=(re.compile(r"allocating ([\d,]+) bytes"),),  # "…allocating 4,294,967,296 bytes"
    idle_fix="CuPy's pool caches {size} of freed blocks: "
    "cupy.get_default_memory_pool().free_all_blocks() (or %gpumon free)",
    general_fix="smaller arrays or chunks, float32 instead of float64, or in-place operations "
    "(out=...)",
)
