"""The package's own errors. Lower layers raise them; the IPython wiring (magics.py) turns them
into one-line ``UsageError``s, so a user sees one line and never a traceback."""

from __future__ import annotations


class RecordingError(ValueError):
    """A recording that can't be written or read. The message is one line: the file, what is
    wrong with it, and what to do."""


class RecordingNotFound(RecordingError, FileNotFoundError):
    """Nothing at the path given; still a ``FileNotFoundError``, as ``load`` raised before."""
