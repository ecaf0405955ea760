"""Lines that native code writes straight to the process's stderr (file descriptor 2, under
Python's ``sys.stderr``), kept out of the user's output while one short call runs. A kernel
shows fd 2 in the cell's output, as a terminal does."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def native_stderr_without(prefix: str) -> Iterator[None]:
    """While the block runs, what anything writes to file descriptor 2 goes to a temporary file.
    After it, every line of it but those that start with ``prefix`` is written to ``sys.stderr``, so
    nothing else is lost. Keep the block short: another thread's stderr comes out after it. Where fd
    2 can't be redirected, the block runs as it is."""
    sys.stderr.flush()  # (what Python holds for fd 2 goes out before it is redirected)
    with contextlib.ExitStack() as files:
        try:  # a file, not a pipe: no size at which a write to it blocks
            caught = files.enter_context(tempfile.TemporaryFile())
        except OSError:
            caught = None
        saved = _redirect_stderr(caught.fileno()) if caught is not None else None
        if caught is None or saved is None:
            yield
            return
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines = caught.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not line.startswith(prefix))
            if kept:
                sys.stderr.write(kept)


def _redirect_stderr(fd: int) -> int | None:
    """Point fd 2 at ``fd``; a copy of what it was, to put back (None: it could not be)."""
    try:
        saved = os.dup(2)
    except OSError:
        return None
    try:
        os.dup2(fd, 2)
    except OSError:
        os.close(saved)
        return None
    return saved
