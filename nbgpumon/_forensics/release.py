"""``%gpumon free`` drops what IPython's hidden references keep alive, never a user variable.

Cleared: output-cache entries (``Out[N]`` and ``_N``) and ``_``/``__``/``___`` that reach a
tensor or array, the last result, and every stored traceback (``sys.last_*``, the shell's own
``InteractiveTB.tb``, the last result's exception) after clearing their frames' locals. Then the
garbage collector runs and each framework gives its unused cache back where it can (torch's
``empty_cache()``, CuPy's ``free_all_blocks()``; JAX keeps its pool until the process ends).
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._sources.base import AllocatorSource
from .holder_scan import holds_memory, stored_tracebacks

_OUTPUT_ALIAS = re.compile(r"^_\d+$")


@dataclass(frozen=True)
class MemoryNow:
    """This kernel's memory at one instant, for the before/after of a release."""

    allocated: int | None  # every framework's allocator, all GPUs
    reserved: int | None
    rss: int | None  # host


def clear_outputs(shell: Any) -> list[str]:
    """Remove output-cache entries that hold memory; returns what was cleared."""
    ns = shell.user_ns
    # IPython pushes _, __, ___ and _N into the namespace *and* into user_ns_hidden, whose
    # copies keep the values alive after the namespace's are gone.
    spaces = [d for d in (ns, getattr(shell, "user_ns_hidden", None)) if isinstance(d, dict)]
    cleared: list[str] = []
    out = ns.get("Out")
    if isinstance(out, dict):
        for n in [n for n, value in list(out.items()) if holds_memory(value)]:
            value = out.pop(n)
            cleared.append(f"Out[{n}]")
            for space in spaces:
                if space.get(f"_{n}") is value:
                    del space[f"_{n}"]
            del value
    for space in spaces:
        for key in [k for k in space if _OUTPUT_ALIAS.match(k) and holds_memory(space[k])]:
            del space[key]  # an _N whose Out entry was already gone
            cleared.append(key)
    hook = getattr(shell, "displayhook", None)
    for name in ("_", "__", "___"):
        values = [getattr(hook, name, None), *(d.get(name) for d in spaces)]
        if any(holds_memory(v) for v in values):
            if hook is not None:
                setattr(hook, name, "")
            for space in spaces:
                if name in space:
                    space[name] = ""
            cleared.append(name)
    last = getattr(shell, "last_execution_result", None)
    if last is not None and holds_memory(getattr(last, "result", None)):
        last.result = None
        cleared.append("the last result")
    return cleared


def clear_tracebacks(shell: Any) -> int:
    """Clear and drop every stored traceback; returns how many frames were cleared."""
    frames = 0
    for tb in stored_tracebacks(shell):
        frames += _clear_frames(tb, shell.user_ns)
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if getattr(sys, name, None) is not None:
            with contextlib.suppress(AttributeError):
                delattr(sys, name)
    tb_holder = getattr(shell, "InteractiveTB", None)
    if tb_holder is not None and getattr(tb_holder, "tb", None) is not None:
        tb_holder.tb = None
    last = getattr(shell, "last_execution_result", None)
    if last is not None and getattr(last, "error_in_exec", None) is not None:
        last.error_in_exec = None
    return frames


def _clear_frames(tb: Any, user_ns: dict) -> int:
    """Drop the locals of a traceback's finished frames, so that whatever else still refers
    to the traceback no longer keeps them alive. A cell's top level is left alone: its locals
    are the user's namespace."""
    n = 0
    while tb is not None:
        frame = tb.tb_frame
        if not (frame.f_code.co_name == "<module>" and frame.f_globals is user_ns):
            with contextlib.suppress(RuntimeError):  # a frame still running can't be cleared
                frame.clear()
                n += 1
        tb = tb.tb_next
    return n


def release(shell: Any, allocators: Sequence[AllocatorSource] = ()) -> tuple[list[str], int]:
    """Clear outputs and tracebacks, collect garbage, then let each allocator give its unused
    cache back (each does so only once its framework is up, never starting it).

    Returns (what was cleared, traceback frames whose locals were dropped).
    """
    cleared = clear_outputs(shell)
    frames = clear_tracebacks(shell)
    gc.collect()
    for allocator in allocators:
        with contextlib.suppress(Exception):
            allocator.release_cache()
    return cleared, frames


@dataclass(frozen=True)
class Freed:
    """What ``%gpumon free`` did: the memory before and after, and what it cleared."""

    before: MemoryNow
    after: MemoryNow
    cleared: tuple[str, ...]  # "Out[3]", "_", ...
    frames: int  # traceback frames whose locals were dropped
