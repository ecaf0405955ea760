"""nbgpumon: see what the GPU is doing while a notebook cell runs, and which cell took the memory.

In IPython/Jupyter: ``%load_ext nbgpumon``, then ``%gpumon``. From Python: :func:`monitor`,
:func:`cells`, :func:`cells_frame`, :func:`mark`, :func:`track`, :func:`holders`,
:func:`free`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .cells import CellHooks
from .config import GPUMon
from .errors import RecordingError, RecordingNotFound
from .holder_scan import HolderScan
from .monitor import Monitor, Region
from .records import CellRecord, DeviceUsage
from .text import summary_line

if TYPE_CHECKING:
    import pandas

    from .session import Recorded

__version__ = "0.1.0"
__all__ = [
    "CellRecord",
    "DeviceUsage",
    "GPUMon",
    "HolderScan",
    "Monitor",
    "RecordingError",
    "RecordingNotFound",
    "Region",
    "cells",
    "cells_frame",
    "free",
    "holders",
    "load",
    "mark",
    "monitor",
    "track",
]

_monitor: Monitor | None = None  # the one monitor of this process
_wiring: dict[str, Any] = {}  # what load_ipython_extension attached to the shell


def monitor() -> Monitor:
    """This process's monitor, started on first use (also outside IPython)."""
    global _monitor
    if _monitor is None or _monitor.closed:
        _monitor = Monitor()
        _monitor.start()
    return _monitor


def cells() -> list[CellRecord]:
    """Every recorded cell and region, oldest first."""
    return monitor().cells()


def cells_frame() -> pandas.DataFrame:
    """The ledger as a pandas DataFrame."""
    return monitor().cells_frame()


def mark(label: str) -> None:
    """Label this instant on the timeline."""
    monitor().mark(label)


def holders(device: str | None = None) -> HolderScan:
    """What holds GPU memory now (host memory without CUDA), biggest first: your variables,
    ``Out[N]``, ``_``, and the frames of stored tracebacks. ``device``: cuda, cuda:N or host."""
    return monitor().holders(device)


def free() -> str:
    """Drop what IPython's hidden references hold (outputs holding tensors or arrays, ``_``,
    stored tracebacks), collect garbage, empty torch's cache; your variables stay. Returns what
    came back, as one line."""
    return monitor().free()


def load(path: str, session: int | None = None) -> Recorded:
    """A recording made with ``%gpumon record PATH``: ``samples_frame()``, ``cells_frame()``,
    ``report_html()``, ``export(DIR, "csv"|"parquet")``. The newest session unless ``session``
    names one (``from nbgpumon.session import sessions``; ``sessions(PATH)`` lists them).

    Raises :class:`RecordingError` (one line: the file and what is wrong) for a file that is
    not a recording or is damaged; :class:`RecordingNotFound` when nothing is at ``path``. A
    file cut short loads as far as it goes, with a warning of what was lost (also in
    ``.damage``). The file is only read."""
    from .session import load as load_session

    recorded = load_session(path, session)
    if recorded.damage:
        warnings.warn(recorded.damage, RuntimeWarning, stacklevel=2)
    return recorded


def track(label: str) -> Region:
    """Record a region of a cell like a cell: ``with nbgpumon.track("epoch 3"): ...``."""
    return monitor().track(label)


# -- IPython extension ----------------------------------------------------------------------
def load_ipython_extension(ip: Any) -> None:
    """``%load_ext nbgpumon``: start the sampler, hook cells, add ``%gpumon``."""
    global _monitor
    if _wiring.get("shell") is ip:
        return  # already loaded into this shell: no second set of hooks or threads
    if _wiring:
        unload_ipython_extension(_wiring["shell"])
    config = GPUMon(parent=ip)
    if _monitor is not None:
        _monitor.close()
    mon = _monitor = Monitor(config)
    hooks = CellHooks(
        ip,
        mon.ledger,
        on_record=lambda record, error: _after_cell(mon, record, error),
        on_start=mon.cell_started,
        on_open=mon.cell_opened,
    )
    hooks.register()
    from .magics import GPUMonMagics

    ip.register_magics(GPUMonMagics(ip, current=lambda: _monitor))
    ip.configurables.append(config)
    _wiring.update(shell=ip, hooks=hooks, config=config)
    mon.start()
    print(_loaded_line(mon))
    if config.record_path:  # set in ipython_config.py: record from the start
        try:
            print(f"nbgpumon: {mon.record(config.record_path)}")
        except RecordingError as exc:
            print(f"nbgpumon: {exc}")


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext nbgpumon``: stop the thread and remove every hook."""
    global _monitor
    if _wiring.get("shell") is not ip:
        return
    _wiring["hooks"].unregister()
    if _wiring["config"] in ip.configurables:
        ip.configurables.remove(_wiring["config"])
    _wiring.clear()
    if _monitor is not None:
        _monitor.close()
        _monitor = None


def _after_cell(mon: Monitor, record: CellRecord, error: BaseException | None) -> None:
    # Runs in post_run_cell, on the main thread, so printing lands in the cell's output.
    record, text = mon.after_cell(record, error)
    del error  # keep no reference to the failing frames past this point
    mon.ledger_changed()
    if _leaving(_wiring.get("shell")):
        return  # `exit` or `quit`: nothing to say about that cell
    if mon.ledger.reset_notice_due:
        mon.ledger.reset_notice_due = False
        print(
            "nbgpumon: torch's peak memory counters now restart at each cell, for exact "
            "per-cell peaks (%config GPUMon.peak_mode = 'preserve' leaves them alone)"
        )
    if mon.config.summary:
        print(summary_line(record))
    if text:
        print(text)


def _leaving(shell: Any) -> bool:
    """Whether the cell asked the shell to exit (terminal IPython stops its loop; a kernel
    sets exit_now)."""
    return bool(getattr(shell, "exit_now", False)) or getattr(shell, "keep_running", True) is False


def _loaded_line(mon: Monitor) -> str:
    interval = f"every {mon.config.interval:g} s"
    if mon.has_gpu:
        devices = mon.nvml.devices
        names = sorted({d.name for d in devices})
        return (
            f"nbgpumon {__version__}: watching {len(devices)} GPU(s) ({', '.join(names)}) "
            f"{interval}; %gpumon status for details"
        )
    return (
        f"nbgpumon {__version__}: no GPU ({mon.nvml.status}); recording host memory per "
        f"cell {interval}"
    )
