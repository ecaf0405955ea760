"""A process on a GPU as status, the snapshot and the post-mortem show it: the device source's
entry with who it is (this kernel, a child of it, another notebook's kernel, another user's)."""

from __future__ import annotations

from dataclasses import dataclass

from .jupyter_kernels import KernelIdentity


@dataclass(frozen=True, slots=True)
class ProcessOnGpu:
    """A compute process on a GPU. ``pid`` is None where a PID namespace hides it."""

    index: int  # its GPU's GpuDevice.index
    pid: int | None
    used_memory: int | None  # bytes; None where the driver won't say
    name: str  # its program, or a child's short command
    is_this_kernel: bool
    # a child of this kernel (any depth): when it started (whose cell: the session's to say)
    child_started: float | None = None
    rank: int | None = None  # a job's worker: its RANK
    job: str = ""
    other_user: bool = False  # another user's: said to be one, nothing more
    kernel: KernelIdentity | None = None  # another Jupyter kernel: its notebook, idle time
    started_by: int | None = None  # a child's: the cell that started it (the session fills it)

    @property
    def is_child(self) -> bool:
        return self.child_started is not None
