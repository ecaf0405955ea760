"""A process on a GPU as status, the snapshot and the post-mortem show it: the device source's
entry with who it is (this kernel, a child of it, another notebook's kernel, another user's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .jupyter_kernels import KernelIdentity

if TYPE_CHECKING:
    from ..devices.protocol import GpuProcess


@dataclass(frozen=True, slots=True)
class ProcessOnGpu:
    """A compute process on a GPU: ``listed`` (the driver's entry) and who it is."""

    listed: GpuProcess
    name: str  # its program, or a child's short command
    # a child of this kernel (any depth): when it started (whose cell: the session's to say)
    child_started: float | None = None
    rank: int | None = None  # a job's worker: its RANK
    job: str = ""
    other_user: bool = False  # another user's: said to be one, nothing more
    kernel: KernelIdentity | None = None  # another Jupyter kernel: its notebook, idle time
    started_by: int | None = None  # a child's: the cell that started it (the session fills it)

    @property
    def index(self) -> int:
        """Its GPU's ``GpuDevice.index``."""
        return self.listed.index

    @property
    def pid(self) -> int | None:
        """None where a PID namespace hides it."""
        return self.listed.pid

    @property
    def used_memory(self) -> int | None:
        """Bytes; None where the driver won't say."""
        return self.listed.used_memory

    @property
    def is_this_kernel(self) -> bool:
        return self.listed.is_this_kernel

    @property
    def is_child(self) -> bool:
        return self.child_started is not None
