"""What holds memory now and what can be given back: the holder scan, ``%gpumon free``, the
processes on a device; also the evidence an out-of-memory post-mortem reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._foundation.errors import UsageError
from ..._ledger.ledger import Ledger
from ..._sampling.device_ask import DeviceAsk
from ..._sources.base import AllocatorSource, AllocatorStats
from ..._sources.devices.protocol import DeviceSource, GpuDevice, GpuProcess
from ..._sources.host import HostSource
from ..._sources.processes.on_gpu import ProcessOnGpu

if TYPE_CHECKING:
    from ..._forensics.explain import MemoryExplained
    from ..._forensics.holder_scan import HolderScan
    from ..._forensics.release import Freed, MemoryNow


class MemoryControl:
    """The holders, the release and the processes of one session (main thread)."""

    def __init__(
        self,
        devices: DeviceSource,
        ask: DeviceAsk,
        allocators: Sequence[AllocatorSource],
        host: HostSource,
        ledger: Ledger,
        shell: Callable[[], Any],
        processes: Callable[[], Sequence[ProcessOnGpu]] = list,
    ) -> None:
        self._devices, self._ask, self._allocators = devices, ask, tuple(allocators)
        self._host, self._ledger, self._shell = host, ledger, shell
        self._processes = processes  # the GPUs' processes, who each is (ChildrenControl's)

    def holders(self, device: str | None = None, budget: float = 0.05) -> HolderScan:
        """What holds memory now, biggest first: variables, ``Out[N]``, ``_``, tracebacks.

        ``device``: "cuda", "cuda:N" or "host"; by default "cuda" once a framework (torch,
        JAX, CuPy) has the GPU up in this kernel, else "host". Stops after ``budget`` seconds
        with a partial answer. "cuda" on a machine with no GPU is a UsageError that says so.
        """
        from ..._forensics import holder_scan

        if device is None:
            device = "cuda" if self.gpu_framework_active() else "host"
        if not isinstance(device, str) or not holder_scan.DEVICES.match(device):
            raise UsageError(f"device is cuda, cuda:N or host, not {device!r}")
        has_gpu = bool(self._devices.devices)
        if device.startswith("cuda") and not has_gpu and not self.gpu_framework_active():
            # (a walk would look at every object and find 0 B: that says nothing)
            raise UsageError(
                f"no GPU here ({self._devices.status}), so nothing holds CUDA memory; "
                "%gpumon holders host lists what holds host memory"
            )
        found = holder_scan.scan(self._shell(), device, budget)
        return dataclasses.replace(found, processes=tuple(self.processes_on(device)))

    def explain(self, budget: float = 0.05) -> list[MemoryExplained]:
        """This kernel's memory on each GPU it can use, by what it is, adding up to the driver's
        figure for this process. It reads the holder scan's categories, each framework's counters
        (read right after the scan), the driver's process list (asked now, waited for at most
        DeviceAsk's limit). A UsageError where there is no GPU."""
        from ..._forensics import holder_scan
        from ..._forensics.explain import NoProcessFigure, explain_device

        gpus = [gpu for gpu in self._devices.devices if gpu.cuda_index is not None]
        if not gpus:
            raise UsageError(
                f"no GPU here ({self._devices.status}): %gpumon holders host lists what "
                "holds host memory"
                if not self._devices.devices
                else "CUDA_VISIBLE_DEVICES hides every GPU from this kernel: nothing to explain"
            )
        scan = holder_scan.scan(self._shell(), "cuda", budget)
        allocators = self._ledger.read_allocators()
        listed = self._ask.processes()
        found = []
        for gpu in gpus:
            place = f"cuda:{gpu.cuda_index}"
            figure, why = _this_process_on(gpu.index, listed, self._ask.lister is not None)
            found.append(
                explain_device(
                    gpu.index,
                    gpu.cuda_index,  # type: ignore[arg-type]
                    scan.categories.get(place, {}),
                    scan.frameworks.get(place, {}),
                    {
                        name: by_cuda[gpu.cuda_index]
                        for name, by_cuda in allocators.items()
                        if gpu.cuda_index in by_cuda
                    },
                    figure,
                    NoProcessFigure(why, self._devices.label) if why else None,
                    scan.partial,
                )
            )
        return found

    def free(self) -> Freed:
        """Drop what IPython's hidden references hold (outputs, ``_``, stored tracebacks),
        collect garbage and give each framework's unused cache back; never a variable."""
        from ..._forensics.release import Freed, release

        before = self._memory_now()
        cleared, frames = release(self._shell(), self._allocators)
        return Freed(before, self._memory_now(), tuple(cleared), frames)

    def processes_on(self, device: str) -> list[ProcessOnGpu]:
        """Processes the device source lists on ``device`` ("cuda", "cuda:N"; none for "host")."""
        if device == "host":
            return []
        procs = list(self._processes())
        if ":" in device:
            cuda = int(device.split(":")[1])
            on = [d.index for d in self._devices.devices if d.cuda_index == cuda]
            procs = [p for p in procs if p.index in on]
        return procs

    def gpu_framework_active(self) -> bool:
        """True once a framework plug-in's allocator has the GPU up in this kernel."""
        return any(source.active() for source in self._allocators)

    # -- the post-mortem's evidence (postmortem.Evidence) ----------------------------------
    @property
    def device_label(self) -> str:
        return self._devices.label

    @property
    def gpus(self) -> Sequence[GpuDevice]:
        return self._devices.devices

    def memory_used(self) -> list[int | None] | None:
        return self._ask.memory_used()

    def allocator_reads(self) -> dict[str, dict[int, AllocatorStats]]:
        return self._ledger.read_allocators()

    def _memory_now(self) -> MemoryNow:
        from ..._forensics.release import MemoryNow

        stats = self._ledger.read_allocator()
        return MemoryNow(
            allocated=sum(s.allocated for s in stats.values()) if stats else None,
            reserved=sum(s.reserved for s in stats.values()) if stats else None,
            rss=self._host.rss(),
        )


def _this_process_on(
    index: int, listed: list[GpuProcess] | None, lists: bool
) -> tuple[int | None, str]:
    """The driver's figure for this process on GPU ``index``, or None and why (a
    NoProcessFigure reason: not listed there, where nothing of this kernel's is or a PID
    namespace hides which process it is; ``lists``: whether the source lists processes)."""
    from ..._forensics.explain import NO_AMOUNT, NO_PROCESS_LISTS, NOT_ANSWERING, NOT_LISTED

    if listed is None:
        return None, NOT_ANSWERING
    mine = [p for p in listed if p.index == index and p.is_this_kernel]
    if not mine:
        return None, NOT_LISTED if lists else NO_PROCESS_LISTS
    if any(p.used_memory is None for p in mine):
        return None, NO_AMOUNT
    return sum(p.used_memory or 0 for p in mine), ""
