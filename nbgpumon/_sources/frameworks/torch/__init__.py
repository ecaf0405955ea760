"""The torch plug-in: PyTorch's CUDA caching allocator and what nbgpumon knows of torch."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders
from .advice import FRAGMENTATION, PRECISION
from .allocator import TorchAllocatorSource
from .history import TorchMemoryHistory
from .metrics import LABEL
from .nvtx import TorchNvtx
from .oom import OOM
from .profiler import TorchCellProfiler

PLUGIN = register_framework(
    Framework(
        name="torch",
        label=LABEL,
        module="torch",
        new_allocator=lambda devices: TorchAllocatorSource(),
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        memory_history=TorchMemoryHistory(),
        nvtx=TorchNvtx(),
        profiler=TorchCellProfiler(),
        pool_advice=(FRAGMENTATION,),
        precision_advice=PRECISION,
    )
)
