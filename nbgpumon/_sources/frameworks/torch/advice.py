"""What the advisor knows of torch: fragmentation of its caching allocator, and mixed
precision for models that train in float32."""

from __future__ import annotations

import sys
from typing import Any

from ..advice import PoolAdvice, PrecisionAdvice

GIB = 2**30

FRAGMENTATION = PoolAdvice(
    topic="fragmentation",
    absent="fragmentation",
    rank=10,
    test="worst",
    min_idle=GIB,
    min_share=0.25,
    evidence="torch held {pool} but only {used} was in tensors ({idle}, {share:.0%} of it idle)"
    "{during}",
    advice="set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before torch starts "
    "(restart the kernel); or max_split_size_mb:<MB> to stop large blocks being "
    "split, or garbage_collection_threshold:0.8 to reclaim cached blocks earlier",
    split="inactive_split",
    split_evidence="up to {split} in split blocks",
    retries_evidence="{retries} allocator retr{plural} (cudaMalloc failed, cache flushed)",
)


def fp32_cuda_modules(shell: Any) -> list[str]:
    """The user's torch modules whose parameters are float32 on a GPU (mixed precision would
    halve them); [] without torch. Reads only what the user already imported."""
    torch = sys.modules.get("torch")
    module = getattr(getattr(torch, "nn", None), "Module", None)
    if module is None:
        return []
    names = []
    for name, value in list((getattr(shell, "user_ns", None) or {}).items()):
        if isinstance(value, module) and not name.startswith("_"):
            try:
                first = next(value.parameters(), None)
            except Exception:
                continue
            if first is not None and first.dtype == torch.float32 and first.is_cuda:
                names.append(name)
    return names


PRECISION = PrecisionAdvice(
    full_precision_models=fp32_cuda_modules,
    evidence="; {names} train in float32",
    advice="mixed precision: torch.autocast('cuda', dtype=torch.bfloat16) around the "
    "forward pass (about half the activation memory), or gradient accumulation "
    "over smaller batches",
    otherwise="gradient accumulation over smaller batches, or mixed precision "
    "(torch.autocast) if you train in float32; %gpumon holders shows what holds it",
)
