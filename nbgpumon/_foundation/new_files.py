"""Files nbgpumon writes where the user says: always new ones, never over a file that is there
(it may be anyone's), and a failure as one line."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import UsageError


@contextlib.contextmanager
def new_file(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO[Any]]:
    """Open ``path`` for writing only if nothing is there; a file left half-written by an
    error is removed. Raises :class:`UsageError` (one line) when it exists or can't be made."""
    target = Path(path).expanduser()
    try:
        handle = target.open("xb") if binary else target.open("x", encoding="utf-8", newline="")
    except FileExistsError:
        raise UsageError(
            f"{target} exists: nbgpumon writes new files only; remove it or name another"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
    except BaseException:
        with contextlib.suppress(OSError):
            target.unlink()
        raise


def write_new_text(path: str | os.PathLike[str], text: str) -> Path:
    """Writes ``text`` into a new file at ``path`` (see :func:`new_file`) and returns its path."""
    with new_file(path) as out:
        out.write(text)
    return Path(path).expanduser()


def write_new(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], object], binary: bool
) -> Path:
    """Calls ``write(handle)`` on a new file at ``path`` (see :func:`new_file`) and returns its
    path."""
    with new_file(path, binary) as out:
        write(out)
    return Path(path).expanduser()


MAX_TAKEN = 100  # names write_new_named tries before giving up (each taken one: a failed open)


def write_new_named(folder: str | os.PathLike[str], stem: str, suffix: str, text: str) -> Path:
    """Writes ``text`` into a new file in ``folder`` named ``stem + suffix``, or
    ``stem-2 + suffix``, ``-3`` and on when that name is taken (see :func:`new_file`), and returns
    its path. For files whose name nbgpumon picks: one that is there is never written over, nor
    refused."""
    for n in range(1, MAX_TAKEN + 1):
        name = stem if n == 1 else f"{stem}-{n}"
        target = Path(folder).expanduser() / f"{name}{suffix}"
        try:
            return write_new_text(target, text)
        except UsageError:
            if not target.exists():
                raise  # not a name taken: a folder that can't be written
    raise UsageError(
        f"{stem}{suffix} to {stem}-{MAX_TAKEN}{suffix} all exist in {folder}: remove some of them"
    )
