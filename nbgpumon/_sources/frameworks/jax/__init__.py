"""The JAX plug-in: XLA's pool on each GPU and what nbgpumon knows of JAX."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders
from .advice import PREALLOCATION
from .allocator import JaxAllocatorSource
from .metrics import LABEL
from .oom import OOM

PLUGIN = register_framework(
    Framework(
        name="jax",
        label=LABEL,
        module="jax",
        new_allocator=lambda devices: JaxAllocatorSource(),
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        pool_advice=(PREALLOCATION,),
    )
)
