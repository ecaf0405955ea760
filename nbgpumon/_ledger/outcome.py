"""How a cell or region ended, and what it is called: from the exception and the source."""

from __future__ import annotations


def first_line(source: str, width: int = 80) -> str:
    """The first non-blank line, stripped and cut to ``width`` characters."""
    for line in source.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= width else line[: width - 1] + "…"
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
    """torch's or CuPy's OutOfMemoryError, the older RuntimeError form, JAX's
    RESOURCE_EXHAUSTED out-of-memory error, or a host MemoryError."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc)
    if "RESOURCE_EXHAUSTED" in text and "memory" in text.lower():
        return True  # JAX's XlaRuntimeError / JaxRuntimeError
    return isinstance(exc, RuntimeError) and "out of memory" in text.lower()


def is_host_out_of_memory(exc: BaseException) -> bool:
    """A host ``MemoryError`` (numpy's too): CuPy's OutOfMemoryError is a MemoryError too,
    but of the GPU."""
    module = type(exc).__module__ or ""
    return isinstance(exc, MemoryError) and not module.startswith("cupy")
