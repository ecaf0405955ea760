"""The one monitor of this process, shared by the Python API and the IPython extension."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .monitor import Monitor

_monitor: Monitor | None = None


def current() -> Monitor | None:
    """The monitor now in use, or None (none made yet, or the extension was unloaded)."""
    return _monitor


def started(shell: Callable[[], Any]) -> Monitor:
    """The monitor, made and started on first use (a closed one is replaced)."""
    global _monitor
    if _monitor is None or _monitor.closed:
        _monitor = Monitor(shell=shell)
        _monitor.start()
    return _monitor


def replace(monitor: Monitor | None) -> None:
    """Use ``monitor`` from now on; the one before it is closed."""
    global _monitor
    if _monitor is not None and _monitor is not monitor:
        _monitor.close()
    _monitor = monitor
