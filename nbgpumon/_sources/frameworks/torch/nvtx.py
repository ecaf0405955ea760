"""torch's NVTX ranges: ``torch.cuda.nvtx`` (NVTX v3, header-only in torch's CUDA builds, so a
tool attached through ``NVTX_INJECTION64_PATH``, as ``nsys`` does, sees them)."""

from __future__ import annotations

import sys

from .allocator import initialised_cuda
from .metrics import LABEL


class TorchNvtx:
    """``torch.cuda.nvtx`` once the user imported torch and CUDA is up; never imports torch."""

    label = LABEL

    def unsupported(self) -> str:
        torch = sys.modules.get("torch")
        # a CPU build has no torch._C._nvtx; torch.cuda.nvtx then raises on every call
        if torch is None or getattr(getattr(torch, "_C", None), "_nvtx", None) is not None:
            return ""
        version = getattr(torch, "__version__", "?")
        return f"torch {version} has no NVTX (a CPU build?)"

    def ready(self) -> bool:
        return initialised_cuda() is not None

    def push(self, name: str) -> None:
        initialised_cuda().nvtx.range_push(name)  # type: ignore[union-attr]

    def pop(self) -> None:
        initialised_cuda().nvtx.range_pop()  # type: ignore[union-attr]
