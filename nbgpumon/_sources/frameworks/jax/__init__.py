"""The JAX plug-in: XLA's pool on each GPU and what nbgpumon knows of JAX."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders, peaks
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
        # the ledger's, status's and headroom's
        peak_note=peaks.peak_note,
        why_sampled=peaks.why_sampled,
        cap_name="JAX's pool limit",
        # forensics
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        pool_advice=(PREALLOCATION,),
    )
)
