"""What the advisor knows of CuPy: freed blocks its pool keeps."""

from __future__ import annotations

from ..advice import PoolAdvice

GIB = 2**30

POOL_CACHE = PoolAdvice(
    topic="CuPy pool cache",
    absent="a large CuPy pool cache",
    rank=60,
    test="worst",
    min_idle=GIB,
    min_share=0.25,
    evidence="CuPy's pool cached {idle} of freed blocks (live arrays: {used}){during}; "
    "{device} counts it as used, but it is not a leak",
    advice="cupy.get_default_memory_pool().free_all_blocks() (or %gpumon free) gives it "
    "back to the driver; it matters only when another framework or process needs it",
)
