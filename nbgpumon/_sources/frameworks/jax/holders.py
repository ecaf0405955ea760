"""How the holder scan walks JAX's arrays: once per addressable shard (CPU shards are host
memory), by each shard's buffer pointer; and flax's and optax's objects, by kind
(``training_state``)."""

from __future__ import annotations

import sys
from typing import Any

from ..holder_walk import HolderKinds, Reach, Storage, class_of
from .training_state import open_training, training_types


def holder_kinds(device: str) -> HolderKinds | None:
    """JAX's arrays, and flax's and optax's training objects, for one walk; None without JAX
    imported."""
    array = class_of(sys.modules.get("jax"), "Array")
    if array is None:
        return None
    types = training_types()
    containers = types.containers
    return HolderKinds(
        arrays=(array,),
        count=_count_array,
        containers=containers,
        open=open_training(types) if containers else None,
        first=(types.module,) if types.module is not None else (),
    )


def _count_array(walk: Reach, holder: str, a: Any) -> None:
    for storage in _shards(walk, a):
        walk.credit(holder, storage)


def _shards(walk: Reach, a: Any) -> list[Storage]:
    found: list[Storage] = []
    try:
        if a.is_deleted():
            return []
        for shard in a.addressable_shards:
            device = shard.device
            index = device.local_hardware_id
            if device.platform == "cpu":
                kind = where = "host"
            elif device.platform in ("gpu", "cuda", "rocm"):
                kind, where = "cuda", f"cuda:{index}"
            else:
                kind = where = str(device)  # tpu and others: only a walk for "any" counts it
            if walk.wants(kind, index):
                data = shard.data
                found.append(((where, data.unsafe_buffer_pointer()), int(data.nbytes)))
    except Exception:
        return []  # deleted meanwhile, a tracer, or a backend without buffer pointers
    return found
