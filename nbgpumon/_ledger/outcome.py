"""How a cell or region ended, and what it is called: from the exception and the source."""

from __future__ import annotations

from .._foundation.clipping import clipped
from .._sources.frameworks import frameworks


def first_line(source: str, width: int = 80) -> str:
    """The first non-blank line, stripped and cut to ``width`` characters."""
    for line in source.splitlines():
        line = line.strip()
        if line:
            return clipped(line, width)
    return ""


def classify_exception(exc: BaseException | None) -> tuple[str, str]:
    """(status, one-line error): "ok", "error", "interrupted" or "oom"."""
    if exc is None:
        return "ok", ""
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", text
    if is_out_of_memory(exc):
        return "oom", text
    return "error", text


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an out-of-memory error. That is a host MemoryError, any exception class
    named ``OutOfMemoryError`` (torch's and CuPy's), or what a framework plug-in says is its
    out-of-memory error (torch's older RuntimeError form, JAX's RESOURCE_EXHAUSTED)."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return _a_framework_s(exc)


def is_host_out_of_memory(exc: BaseException) -> bool:
    """A host ``MemoryError`` (numpy's too), not one a framework plug-in says is the GPU's
    (CuPy's OutOfMemoryError is a MemoryError too)."""
    return isinstance(exc, MemoryError) and not _a_framework_s(exc)


def _a_framework_s(exc: BaseException) -> bool:
    return any(plugin.oom is not None and plugin.oom.claims(exc) for plugin in frameworks())
