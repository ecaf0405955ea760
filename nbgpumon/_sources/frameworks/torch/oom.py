"""torch's out-of-memory errors: ``torch.OutOfMemoryError``'s message and its fixes."""

from __future__ import annotations

import re

from ..out_of_memory import OutOfMemory


def _claims(exc: BaseException) -> bool:
    """The older form of torch's out-of-memory error: a RuntimeError that says so (the newer
    ``torch.OutOfMemoryError`` is caught by its class name, as every framework's is)."""
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


OOM = OutOfMemory(
    claims=_claims,
    requested=(re.compile(r"Tried to allocate ([\d.]+) ?([KMGT]i?B|B)"),),
    device=(re.compile(r"GPU (\d+)"),),
    idle_fix="{size} is reserved by torch{other} but unused: torch.cuda.empty_cache() (or "
    "%gpumon free), or restart with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    general_fix="a smaller batch, mixed precision (torch.autocast) or gradient accumulation",
)
