"""A child's figures: what the live table keeps while it runs (:class:`ChildRun`, the sampler
thread's) and the frozen copy records, views and the recording take (:class:`ChildUsage`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ChildGpu:
    """One child's use of one GPU."""

    index: int  # the device source's numbering (its GpuDevice.index)
    peak: int  # bytes
    exact: bool  # from the driver's accounting; else the highest sampled (a lower bound: ≥)
    interval: float  # seconds between the samples it was read at (when not exact)
    util_mean: float | None = None  # percent of SM time, the driver's per-process samples
    util_samples: int = 0


@dataclass(frozen=True, slots=True)
class ChildUsage:
    """A process this kernel started (directly or below), as a cell's record keeps it."""

    pid: int
    command: str  # "python train.py --lr 3e-4", cut short
    started: float  # unix seconds
    ended: float | None  # unix seconds it was last seen alive; None: running when read
    exit_code: int | None  # as Popen says it (minus a signal); None where not seen
    parent: int  # its parent's PID when first seen
    depth: int  # 1: the kernel's own child, 2: a script behind ``sh -c``, ...
    gpus: tuple[ChildGpu, ...] = ()
    rank: int | None = None  # RANK of a torchrun/accelerate/Lightning worker
    local_rank: int | None = None
    world_size: int | None = None
    job: str = ""  # what ties a job's ranks together (its run id, or its master's address)
    launcher: str = ""  # its parent's command, where the parent is a child of this kernel too

    @property
    def peak(self) -> int:
        """Its peak GPU memory, summed over GPUs (each GPU's own peak)."""
        return sum(g.peak for g in self.gpus)

    @property
    def exact(self) -> bool:
        return bool(self.gpus) and all(g.exact for g in self.gpus)

    @property
    def running(self) -> bool:
        return self.ended is None


def child_from_dict(d: dict) -> ChildUsage:
    """The inverse of ``dataclasses.asdict`` (a recording's JSON)."""
    fields = dict(d)
    fields["gpus"] = tuple(ChildGpu(**g) for g in fields.get("gpus", ()))
    return ChildUsage(**fields)


@dataclass(slots=True)
class ChildRun:
    """A descendant while the table follows it (the sampler thread writes it; others read a
    :meth:`usage` copy)."""

    pid: int
    start_ticks: int
    command: str
    started: float
    parent: int
    depth: int
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    job: str = ""
    launcher: str = ""
    ended: float | None = None
    exit_code: int | None = None
    last_seen: float = 0.0
    peaks: dict[int, int] = field(default_factory=dict)  # device index -> highest seen, bytes
    exact: dict[int, int] = field(default_factory=dict)  # device index -> accounted peak
    util: dict[int, tuple[float, int]] = field(default_factory=dict)  # index -> (sum, samples)
    on_gpu: bool = False
    interval: float = 0.0  # the longest gap between two lists that showed it on a GPU

    def usage(self, interval: float) -> ChildUsage:
        """A frozen copy; ``interval``: the scans' (its sampling, unless lists were further
        apart while it was on a GPU)."""
        interval = round(max(interval, self.interval), 2)
        gpus = []
        for index in sorted(set(self.peaks) | set(self.exact)):
            exact = self.exact.get(index)
            total, n = self.util.get(index, (0.0, 0))
            gpus.append(
                ChildGpu(
                    index,
                    exact if exact is not None else self.peaks.get(index, 0),
                    exact is not None,
                    interval,
                    total / n if n else None,
                    n,
                )
            )
        return ChildUsage(
            self.pid, self.command, self.started, self.ended, self.exit_code, self.parent,
            self.depth, tuple(gpus), self.rank, self.local_rank, self.world_size, self.job,
            self.launcher,
        )  # fmt: skip
