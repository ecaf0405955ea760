"""The running IPython shell, found without importing IPython where nobody else did, and
whether it is a terminal or a kernel."""

from __future__ import annotations

import sys
from typing import Any


def current_shell() -> Any:
    """The running IPython shell, or None outside IPython (IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        return ipython.get_ipython()
    except Exception:
        return None


def in_terminal(shell: Any) -> bool:
    """Whether what ``shell`` displays is printed where it runs (terminal IPython, a plain
    InteractiveShell) rather than sent to a front end through a kernel (JupyterLab, Notebook, VS
    Code, Colab, nbclient). There a display is text, printed once, and cannot be updated in place.
    The one place nbgpumon tells the two apart."""
    return getattr(shell, "kernel", None) is None
