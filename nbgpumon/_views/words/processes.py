"""Who a process on a GPU is, in words. It is this kernel, a child of it (and the cell that started
it), a job's rank, another notebook's kernel (by its notebook, with its idle time), another user's
process (nothing more), or its program."""

from __future__ import annotations

from typing import Any

from ..._foundation.wording import format_seconds


def process_who(p: Any) -> str:
    """Who a process is, in words: ``python train.py (child of this kernel, started by [5])``; ``p``
    is any process entry with the process facts' attributes (status's, the snapshot's, the
    post-mortem's)."""
    if p.is_this_kernel:
        return "this kernel"
    if getattr(p, "other_user", False):
        return "another user's process"
    if getattr(p, "child_started", None) is not None or getattr(p, "is_child", False):
        cell = getattr(p, "started_by", None)
        by = f", started by [{cell}]" if cell is not None else ""
        rank = getattr(p, "rank", None)
        role = f", rank {rank}" if rank is not None else ""
        return f"{p.name} (child of this kernel{by}{role})"
    kernel = getattr(p, "kernel", None)
    if kernel is not None:
        return kernel_words(kernel)
    return p.name


def kernel_words(kernel: Any) -> str:
    """A Jupyter kernel named by its notebook,
    ``Jupyter kernel of analysis.ipynb (idle 12 min 3 s)``, or by its kernel id."""
    if kernel.notebook:
        head = f"Jupyter kernel of {kernel.notebook}"
    elif kernel.kernel_id:
        head = f"Jupyter kernel {kernel.kernel_id}"
    else:
        head = "a Jupyter kernel"
    if kernel.execution_state == "busy":
        return f"{head} (busy)"
    if kernel.idle_seconds is not None:
        return f"{head} (idle {format_seconds(kernel.idle_seconds)})"
    return head
