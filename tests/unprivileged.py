"""What a user who is not root meets, tested as root too (CI runs the tests as root, and root
writes into any folder): a function run in a fork of this process that has become ``nobody``,
so that nothing has to be installed or importable for another user."""

from __future__ import annotations

import os
import pickle
import pwd
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
NOBODY = "nobody"


def as_a_user(run: Callable[[], T]) -> T:
    """``run()`` here when this process is not root; as root, ``run()`` in a fork that drops
    to ``nobody`` first, its result (or the traceback it raised, as an AssertionError) brought
    back pickled."""
    if os.geteuid() != 0:
        return run()
    user = pwd.getpwnam(NOBODY)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            try:
                outcome = ("returned", run())
            except BaseException:
                outcome = ("raised", traceback.format_exc())
            with os.fdopen(write, "wb") as out:
                pickle.dump(outcome, out)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        data = got.read()
    os.waitpid(pid, 0)
    assert data, f"the fork running as {NOBODY} ended without an answer"
    kind, value = pickle.loads(data)
    if kind == "raised":
        raise AssertionError(f"as {NOBODY}:\n{value}")
    return value


@contextmanager
def read_only_folder(parent: Path) -> Iterator[Path]:
    """A folder that the user :func:`as_a_user` runs as owns and may read but not write (mode
    0500): in ``parent`` when this process is not root; as root, ``nobody``'s, in a folder of
    its own under the system's temporary folder that nobody can reach (pytest's are root's
    alone). Writable again and removed afterwards."""
    if os.geteuid() != 0:
        folder = parent / "ro"
        folder.mkdir()
        base = None
    else:
        base = Path(tempfile.mkdtemp())
        base.chmod(0o711)  # nobody may pass through, not list or write
        folder = base / "ro"
        folder.mkdir()
        user = pwd.getpwnam(NOBODY)
        os.chown(folder, user.pw_uid, user.pw_gid)
    folder.chmod(0o500)
    try:
        yield folder
    finally:
        folder.chmod(0o700)
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
