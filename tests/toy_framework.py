"""A toy framework plug-in, whole in one file, as docs/recipes.md's "Add a framework"
recipe makes one: its metrics registered in the ``framework`` group, an allocator source that
reads the fake framework ``toyfw`` (put in ``sys.modules`` here: nbgpumon never imports a
framework, it finds one the user imported), and the plug-in registered. Importing this module
before ``%load_ext nbgpumon`` is all it takes; tests/test_toy_framework.py finds it in status,
the ledger, the chart's columns, the recording and the exporter.

Registration is for the whole process: import it only in a child process (a kernel)."""

from __future__ import annotations

import sys
import types

from nbgpumon._foundation.metrics import FRAMEWORK, SERIES, Metric, register
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._sources.frameworks import Framework, register_framework

NAME = "toy"  # its columns: gpu{i}.toy.{metric}
LABEL = "Toy"  # how its users write it
MODULE = "toyfw"  # what the user imports

# 1. its metrics: "allocated" and "reserved", so the ledger's sampled peaks and the widget's
# running cell find them; the exporter's shared allocator families
METRICS = register(
    FRAMEWORK,
    Metric(NAME, "reserved", "bytes", "memory", "pool (Toy)", SERIES,
           export="allocator_reserved_bytes", color="#14b8a6"),
    Metric(NAME, "allocated", "bytes", "memory", "in use (Toy)", SERIES,
           export="allocator_allocated_bytes", color="#f43f5e"),
    label=LABEL,
)  # fmt: skip


# the framework itself: a pool per CUDA device, (bytes in use, bytes held from the driver)
toyfw = types.ModuleType(MODULE)
toyfw.pools = {}
sys.modules[MODULE] = toyfw


def use(cuda_index: int, in_use: int, held: int) -> None:
    """The user's code: the toy now holds ``held`` bytes on a device, ``in_use`` of them live."""
    toyfw.pools[cuda_index] = (in_use, held)


# 2. its allocator source: reads only what the user's code started, never raises
class ToyAllocatorSource:
    name = NAME
    label = LABEL
    metrics = METRICS
    peak_resettable = False  # the toy keeps no peak: a cell's peak is sampled

    def __init__(self) -> None:
        self.status = "toyfw not imported"

    def _pools(self) -> dict[int, tuple[int, int]]:
        module = sys.modules.get(MODULE)
        if module is None:
            self.status = "toyfw not imported"
            return {}
        if not module.pools:
            self.status = "toyfw imported, no pool yet (not read)"
        return module.pools

    def active(self) -> bool:
        return bool(self._pools())

    def device_uuids(self) -> list[str]:
        return []  # CUDA's numbering: the mapping comes from CUDA_VISIBLE_DEVICES

    def read(self, cuda_index: int) -> AllocatorStats | None:
        pool = self._pools().get(cuda_index)
        if pool is None:
            return None
        self.status = "ok"
        in_use, held = pool
        return AllocatorStats(
            allocated=in_use, reserved=held, peak_allocated=None, allocated_total=None
        )

    def reset_peak(self, cuda_index: int) -> bool:
        return False

    def timeline_values(self, stats: AllocatorStats) -> list[float | None]:
        return [stats.metric_value(m.name) for m in self.metrics]

    def watch_thread(self) -> None:
        """No thread-local hooks."""

    def release_cache(self) -> None:
        """The held bytes not in use go back to the driver."""
        for index, (in_use, _) in list(self._pools().items()):
            toyfw.pools[index] = (in_use, in_use)


# 3. the plug-in: what the ledger, status and headroom ask it (the rest keeps its defaults)
PLUGIN = register_framework(
    Framework(
        name=NAME,
        label=LABEL,
        module=MODULE,
        new_allocator=lambda devices: ToyAllocatorSource(),
        peak_note=lambda source, peak_mode: "per-cell peaks sampled (≥): the toy keeps none",
        cap_name="the toy's pool limit",
    )
)
