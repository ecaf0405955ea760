"""The torch plug-in: PyTorch's CUDA caching allocator and what nbgpumon knows of torch."""

from __future__ import annotations

from ..plugin import Framework, register_framework
from . import holders, peaks
from .advice import FRAGMENTATION, PRECISION
from .allocator import TorchAllocatorSource
from .history import TorchMemoryHistory
from .metrics import LABEL
from .nvtx import TorchNvtx
from .oom import OOM
from .profiler import TorchCellProfiler
from .trials import TorchTrials

PLUGIN = register_framework(
    Framework(
        name="torch",
        label=LABEL,
        module="torch",
        new_allocator=lambda devices: TorchAllocatorSource(),
        # the ledger's, status's and headroom's
        listed_before_import=True,
        peak_note=peaks.peak_note,
        reset_means=peaks.RESET_MEANS,
        preserve_means=peaks.PRESERVE_MEANS,
        traced_as=peaks.TRACED_AS,
        reset_notice=peaks.RESET_NOTICE,
        why_sampled=peaks.why_sampled,
        memory_cap=peaks.memory_cap,
        cap_name=peaks.CAP_NAME,
        owns_unnamed_figures=True,  # nbgpumon measured torch alone before JAX and CuPy came
        cache_words="torch's cache",
        reserve_name="cache",
        # forensics
        holder_kinds=holders.holder_kinds,
        oom=OOM,
        memory_history=TorchMemoryHistory(),
        nvtx=TorchNvtx(),
        profiler=TorchCellProfiler(),
        pool_advice=(FRAGMENTATION,),
        trials=TorchTrials(),
        precision_advice=PRECISION,
    )
)
