"""torch's out-of-memory errors: ``torch.OutOfMemoryError``'s message and its fixes."""

from __future__ import annotations

import re

from ..out_of_memory import OutOfMemory

OOM = OutOfMemory(
    requested=(re.compile(r"Tried to allocate ([\d.]+) ?([KMGT]i?B|B)"),),
    device=(re.compile(r"GPU (\d+)"),),
    idle_fix="{size} is reserved by torch{other} but unused: torch.cuda.empty_cache() (or "
    "%gpumon free), or restart with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    general_fix="a smaller batch, mixed precision (torch.autocast) or gradient accumulation",
)
