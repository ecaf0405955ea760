"""torch's CUDA memory history, as allocation tracing uses it.

Facts relied on (torch 2.11 on the GPU machine, 2.13 here):

- ``_record_memory_history(enabled, context, stacks, max_entries, ...)`` takes strings since
  torch 2.1; a bool ``enabled`` goes to the legacy API, which has no ``max_entries``. Enabling
  it calls ``lazyInitCUDA()``, so it is only ever called once torch has initialised CUDA.
- ``memory_snapshot(include_traces=False)`` returns the segments without the trace ring
  buffer; ``_snapshot()`` with 100 000 trace entries takes 110-170 ms on an H200 host. Blocks
  allocated before recording began have no frames. Even without traces a snapshot costs 2-3
  µs per live block (a kernel's stack is ~28 frames deep), so tracing takes one only when the
  allocation count has moved.
- ``_set_memory_metadata(str)`` is thread-local and lands only on ``device_traces`` entries
  (``user_metadata``), never on blocks: the tag only shows which cell each allocation came
  from in a snapshot the user dumps for pytorch.org/memory_viz.
- A history event's ``size`` is what the allocation asked for (``requested_size``), not the
  block that served it (rounded up to 512 B, or a whole segment's remainder), which is what
  ``memory_allocated()`` counts: replaying events takes the ``requested_bytes`` counters,
  whose peak ``reset_peak_memory_stats`` resets with the others (seen on an H100 with torch
  2.11: a training step's history never met its ``allocated_bytes`` peak).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from .allocator import initialised_cuda
from .metrics import LABEL


class TorchMemoryHistory:
    """``torch.cuda.memory``'s recorder; never imports torch or initialises CUDA."""

    label = LABEL
    viewer = "https://pytorch.org/memory_viz"

    def ready(self) -> bool:
        return initialised_cuda() is not None

    def unsupported(self) -> str:
        memory = getattr(initialised_cuda(), "memory", None)
        record = getattr(memory, "_record_memory_history", None)
        if (
            record is None
            or getattr(memory, "memory_snapshot", None) is None
            or not {"max_entries", "stacks", "context"} <= _parameters(record)
        ):
            version = getattr(sys.modules.get("torch"), "__version__", "?")
            return f"torch {version} is too old for allocation tracing (needs 2.1 or later)"
        return ""

    def enabled(self) -> bool | None:
        torch = sys.modules.get("torch")
        probe = getattr(getattr(torch, "_C", None), "_cuda_isHistoryEnabled", None)
        return None if probe is None else bool(probe())

    def enable(self, max_entries: int) -> None:
        # Python frames only: C++ unwinding costs far more per allocation. "alloc" keeps
        # stacks for live blocks and alloc events, none for frees; with no history wanted,
        # "state" keeps only the live blocks' stacks.
        history = max_entries > 0
        _memory()._record_memory_history(
            enabled="all" if history else "state",
            context="alloc" if history else "state",
            stacks="python",
            max_entries=max(max_entries, 1),
        )

    def disable(self) -> None:
        _memory()._record_memory_history(enabled=None)

    def snapshot(self) -> Any:
        snapshot = _memory().memory_snapshot
        # without the trace ring buffer a snapshot costs ~0.1 ms instead of ~150 ms
        if "include_traces" in _parameters(snapshot):
            return snapshot(include_traces=False)
        return snapshot()

    def full_snapshot(self) -> Any:
        return _memory()._snapshot()

    def requested_bytes(self, device: int) -> tuple[int, int] | None:
        try:
            cuda = initialised_cuda()
            stats = cuda.memory.memory_stats_as_nested_dict(device)  # type: ignore[union-attr]
            asked = stats["requested_bytes"]["all"]
            return int(asked["current"]), int(asked["peak"])
        except Exception:  # (a torch too old to count them, or CUDA not up)
            return None

    def allocation_counts(self) -> tuple[int, ...] | None:
        try:
            cuda = initialised_cuda()
            nested = cuda.memory.memory_stats_as_nested_dict  # type: ignore[union-attr]
            return tuple(
                int(nested(i)["allocation"]["all"]["allocated"])
                for i in range(cuda.device_count())  # type: ignore[union-attr]
            )
        except Exception:
            return None

    def tag(self) -> str | None:
        memory = getattr(initialised_cuda(), "memory", None)
        if not hasattr(memory, "_set_memory_metadata"):
            return None
        return memory._get_memory_metadata()

    def set_tag(self, text: str) -> None:
        _memory()._set_memory_metadata(text)


def _memory() -> Any:
    cuda = initialised_cuda()
    if cuda is None:
        raise RuntimeError("torch has not initialised CUDA")
    return cuda.memory


def _parameters(fn: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()
