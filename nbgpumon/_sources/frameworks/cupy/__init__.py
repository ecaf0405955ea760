"""The CuPy plug-in: CuPy's memory pool on each GPU and what nbgpumon knows of CuPy."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders, peaks
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
        # the ledger's, status's and headroom's
        peak_note=peaks.peak_note,
        why_sampled=peaks.why_sampled,
        exact_peaks=peaks.hook_armed,
        cap_name="CuPy's pool limit",
        settings=(peaks.PEAK_HOOK,),
        cache_words="CuPy's unused pool blocks",
        # forensics
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        pool_advice=(POOL_CACHE,),
    )
)
