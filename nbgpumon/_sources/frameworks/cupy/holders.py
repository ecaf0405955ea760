"""How the holder scan walks CuPy's arrays: once per allocation, at its pool chunk's size
(what the pool counts); a CuPy array is always on a GPU."""

from __future__ import annotations

import sys
from typing import Any

from ..holder_walk import HolderKinds, Reach, Storage, class_of


def holder_kinds(device: str) -> HolderKinds | None:
    """CuPy's arrays for one walk; None without CuPy imported, or for a walk of host memory."""
    if device == "host":
        return None
    array = class_of(sys.modules.get("cupy"), "ndarray")
    if array is None:
        return None

    def count(walk: Reach, holder: str, a: Any) -> None:
        walk.credit(holder, _storage(walk, a, array))

    return HolderKinds(arrays=(array,), count=count)


def _storage(walk: Reach, a: Any, array: type) -> Storage | None:
    # Attribute reads only: anything that calls into CUDA could create a context.
    try:
        index = a.device.id
        if not walk.wants("cuda", index):
            return None
        # Views share their base's Memory; its size is the pool chunk, what the pool counts.
        mem = getattr(getattr(a, "data", None), "mem", None)
        if mem is not None:
            return (f"cuda:{index}", int(mem.ptr)), int(mem.size)
        base = a
        while isinstance(getattr(base, "base", None), array):
            base = base.base
        return (f"cuda:{index}", int(base.data.ptr)), int(base.nbytes)
    except Exception:
        return None
