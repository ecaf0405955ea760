"""The package's own errors. Lower layers raise them; the IPython wiring (``_ipython/``) shows
each as one line, so a user sees what to do and never a traceback."""

from __future__ import annotations


class RecordingError(ValueError):
    """A recording that can't be written or read. The message is one line: the file, what is
    wrong with it, and what to do."""


class RecordingNotFound(RecordingError, FileNotFoundError):
    """Nothing at the path given; still a ``FileNotFoundError``, as ``load`` raised before."""


class UsageError(ValueError):
    """A call given something it can't take: one line that says what to give instead. In
    IPython it shows as that line alone, as IPython's own usage errors do."""


def failure_line(what: str, exc: BaseException) -> str:
    """A caught exception as a status line, ``what: ErrorType: first line of its message``."""
    return f"{what}: {exception_line(exc)}"


def exception_line(exc: BaseException) -> str:
    """A caught exception in one line, ``ErrorType: first line of its message`` (its own
    words, kept as a fact's)."""
    detail = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {detail[0] if detail else ''}".rstrip(": ")
