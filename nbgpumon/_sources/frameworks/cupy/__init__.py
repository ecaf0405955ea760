"""The CuPy plug-in: CuPy's memory pool on each GPU and what nbgpumon knows of CuPy."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders
from .advice import POOL_CACHE
from .allocator import CupyAllocatorSource
from .metrics import LABEL
from .oom import OOM

PLUGIN = register_framework(
    Framework(
        name="cupy",
        label=LABEL,
        module="cupy",
        new_allocator=lambda devices: CupyAllocatorSource(max_devices=devices),
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        pool_advice=(POOL_CACHE,),
    )
)
