"""The interpreter the children tests start their children with, named ``python`` however
pytest itself was started (``python -m pytest``, ``python3 -m pytest``, ``.venv/bin/pytest``,
whose ``sys.executable`` may end in ``python3``): nbgpumon names a child by its command line's
program, and the tests read "python train.py gpu"."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from functools import cache
from pathlib import Path


@cache
def python() -> str:
    """This interpreter under the name ``python``: ``sys.executable`` where it is so named,
    else a symlink to it in a folder of its own, removed when the tests end. (The children run
    the standard library only: a symlink outside a virtualenv runs its base interpreter.)"""
    if Path(sys.executable).name == "python":
        return sys.executable
    folder = tempfile.mkdtemp(prefix="nbgpumon-python-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    link = os.path.join(folder, "python")
    os.symlink(sys.executable, link)
    return link
