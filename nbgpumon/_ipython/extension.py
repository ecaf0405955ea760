"""What ``%load_ext nbgpumon`` sets up and ``%unload_ext nbgpumon`` takes down: one monitor, its
cell hooks, the magic, and a one-line display of nbgpumon's own usage errors."""

from __future__ import annotations

import sys
import weakref
from typing import Any

from .._api import current
from .._api.monitor import Monitor
from .._foundation.errors import RecordingError, UsageError
from .._foundation.gpu_names import gpu_key, hidden_gpus
from .._foundation.version import __version__
from .._foundation.wording import counted
from .._session.cell_pipeline import CellOutcome
from .._session.config import GPUMon
from .._views.cell_end import cell_lines
from .._views.status.settings import refused_line
from .cell_hooks import CellHooks
from .magics import GPUMonMagics

_wiring: dict[str, Any] = {}  # what load() attached to the shell
# What the last unloaded monitor ran with beyond the shell's configuration (a recording, the
# exporter, the cluster, the summary): the next load into the same shell goes on with it.
_kept: dict[str, Any] = {}


def load(ip: Any) -> None:
    """Start the sampler, hook cells, add ``%gpumon``; a second load into one shell does
    nothing."""
    if _wiring.get("shell") is ip:
        return  # already loaded into this shell: no second set of hooks or threads
    if _wiring:
        unload(_wiring["shell"])
    kept, kept_for = _kept.pop("settings", None), _kept.pop("shell", None)
    if kept_for is not ip:
        kept = None  # another shell's settings
    config, refused = GPUMon.for_shell(ip, kept)
    # What a configured value starts (a recording, the exporter, the cluster) starts after the
    # sampler, each with its line; until then the setting says nothing runs, so a start that
    # fails leaves it saying so.
    starts = {name: getattr(config, name) for name in _STARTED_BY_SETTINGS}
    for name in _STARTED_BY_SETTINGS:
        config.set_trait(name, config.class_traits()[name].default())
    # the shell the hooks are on, found in one C call at each cell's edges (IPython's
    # get_ipython() walks its class's instances: ~20 µs a cell on a small machine)
    mon = Monitor(config, shell=weakref.ref(ip))
    current.replace(mon)
    hooks = CellHooks(ip, mon.cell_pipeline, on_outcome=lambda outcome: _after_cell(mon, outcome))
    hooks.register()
    magics = GPUMonMagics(ip, current=current.current)
    ip.register_magics(magics)  # (which adds it to the shell's configurables)
    ip.configurables.append(config)
    errors_shown = _show_usage_errors_as_one_line(ip)
    _wiring.update(shell=ip, hooks=hooks, config=config, magics=magics, errors_shown=errors_shown)
    mon.start()
    print(_loaded_line(mon))
    for fact in refused:
        print(f"nbgpumon: {refused_line(fact)}")
    _start_configured(mon, config, starts)


# the settings that start something when configured: ipython_config.py, or kept by a reload
_STARTED_BY_SETTINGS = ("record_path", "export_port", "prometheus_url")


def _start_configured(mon: Monitor, config: GPUMon, starts: dict[str, Any]) -> None:
    """Start what the configuration asks for, a line each; one that cannot start is taken
    out of the shell's configuration, so that the next load does not try it again."""
    actions = {
        "record_path": (mon.record, RecordingError),
        "export_port": (mon.export, UsageError),
        "prometheus_url": (lambda url: mon.read_cluster(url, wait=0), UsageError),
    }
    for name, value in starts.items():
        if not value:
            continue
        start, refusal = actions[name]
        try:
            print(f"nbgpumon: {start(value)}")
        except refusal as exc:
            config.forget(name)
            print(f"nbgpumon: GPUMon.{name} = {value!r} is not used: {exc}")


def unload(ip: Any) -> None:
    """Stop the thread and remove every hook."""
    if _wiring.get("shell") is not ip:
        return
    _wiring["hooks"].unregister()
    _kept.update(shell=ip, settings=_wiring["config"].live_settings())
    for configurable in (_wiring["config"], _wiring["magics"]):
        if configurable in ip.configurables:  # a reload adds them again
            ip.configurables.remove(configurable)
    previous = _wiring["errors_shown"]
    if previous is not None:  # the user's own handler, as it was
        ip.custom_exceptions, ip.CustomTB = previous
    _wiring.clear()
    current.replace(None)


def _show_usage_errors_as_one_line(ip: Any) -> tuple | None:
    """Show nbgpumon's UsageError (``nbgpumon.mark("")`` and the like) as IPython shows its
    own: one line, no traceback. A handler the user set for other exceptions keeps handling
    those. Returns what to put back at unload (None: nothing was changed)."""
    if not hasattr(ip, "set_custom_exc"):
        return None
    old_types = tuple(getattr(ip, "custom_exceptions", ()) or ())
    old_handler = getattr(ip, "CustomTB", None)  # already bound to the shell

    def handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None):
        if isinstance(value, UsageError):
            print(f"UsageError: {value}", file=sys.stderr)
            return None
        return old_handler(etype, value, tb, tb_offset) if old_handler is not None else None

    ip.set_custom_exc((*old_types, UsageError), handler)
    return old_types, old_handler


def _after_cell(mon: Monitor, outcome: CellOutcome) -> None:
    # Runs in post_run_cell, on the main thread, so printing lands in the cell's output.
    if _leaving(_wiring.get("shell")):
        return  # `exit` or `quit`: nothing to say about that cell
    lines = cell_lines(outcome, mon.config.summary)
    if lines:
        # A kernel sends what waits on stdout, then stderr, at the cell's end: the cell's
        # UsageError (stderr) would come after these lines. Send what the cell said first,
        # in that order (~40 µs each, only when there is a line to print), as a terminal shows it.
        sys.stdout.flush()
        sys.stderr.flush()
    for line in lines:
        print(line)


def _leaving(shell: Any) -> bool:
    """Whether the cell asked the shell to exit (terminal IPython stops its loop; a kernel
    sets exit_now)."""
    return bool(getattr(shell, "exit_now", False)) or getattr(shell, "keep_running", True) is False


def _loaded_line(mon: Monitor) -> str:
    interval = f"every {mon.config.interval:g} s"
    if mon.has_gpu:
        devices = mon.data.devices
        names = sorted({d.name for d in devices})
        hidden = hidden_gpus(d.index for d in devices if d.cuda_index is None)
        note = f" ({hidden})" if hidden else ""
        on_mig = [gpu_key(d.index, d.mig.gpu_instance) for d in devices if d.mig]
        where = f" on MIG device {', '.join(on_mig)}" if on_mig else ""
        line = (
            f"nbgpumon {__version__}: watching {counted(len(devices), 'GPU')} "
            f"({', '.join(names)}){where}"
            f"{note} {interval}; %gpumon status for details"
        )
        # what CUDA_VISIBLE_DEVICES asked for and did not get, where the user set it
        note = mon.device_mapping_note
        return f"{line}\nnbgpumon: {note}" if note else line
    return (
        f"nbgpumon {__version__}: no GPU ({mon.device_status}); recording host memory per "
        f"cell {interval}"
    )
