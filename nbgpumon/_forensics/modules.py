"""The user's models as the advisor asks about them: which ones hold float32 weights on a GPU."""

from __future__ import annotations

import sys
from typing import Any


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
