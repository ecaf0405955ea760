"""``GPUMon`` holds the settings, as traitlets, so ``%config GPUMon.interval = 0.25`` works."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from traitlets import Bool, Enum, Float, Int, TraitError, Unicode, validate
from traitlets.config import Config, Configurable

from .._ledger.ledger import PEAK_MODES
from .._sampling.quiet import IDLE_INTERVAL, QUIET_AFTER
from .._sampling.sampler import MAX_INTERVAL, MIN_INTERVAL
from .._sources.devices import device_sources
from .._sources.frameworks import frameworks, plugin_settings
from .facts.settings import SettingOutcome, SettingRefused

_INTERVAL_SAYS = f"must be between {MIN_INTERVAL} and {MAX_INTERVAL:g} seconds"
_INTERVAL_EXAMPLE = "; e.g. %config GPUMon.{name} = 0.25"

# The numeric settings' ranges: (whether a value is allowed, what the one line says the setting
# is, an example to end the line with).
_RANGES: dict[str, tuple[Callable[[float], bool], str, str]] = {
    **dict.fromkeys(
        ("interval", "allocator_interval", "detail_interval", "slow_interval", "process_interval"),
        (lambda v: MIN_INTERVAL <= v <= MAX_INTERVAL, _INTERVAL_SAYS, _INTERVAL_EXAMPLE),
    ),
    "idle_interval": (
        lambda v: v == 0 or MIN_INTERVAL <= v <= MAX_INTERVAL,
        f"is 0 (off) or {MIN_INTERVAL} to {MAX_INTERVAL:g} seconds",
        "; e.g. %config GPUMon.idle_interval = 2",
    ),
    "leak_threshold": (lambda v: v >= 0, "is a number of bytes >= 0 (0: off)", ""),
    "record_raw_seconds": (
        lambda v: v >= 0,
        "is a number of seconds >= 0 (0: keep every sample)",
        "",
    ),
    "cluster_timeout": (lambda v: 0.1 <= v <= 60, "must be 0.1 to 60 seconds", ""),
    "cluster_interval": (
        lambda v: v == 0 or 1 <= v <= 3600,
        "is 0 (the server's scrape interval) or 1 to 3600 seconds",
        "",
    ),
    "export_port": (
        lambda v: 0 <= v <= 65535,
        "is 0 (off) or a port from 1 to 65535",
        "; e.g. %config GPUMon.export_port = 9476",
    ),
    "history": (lambda v: 1 <= v <= 10_000_000, "must be between 1 and 10000000", ""),
}


def _nobody_listens(fact: SettingOutcome | SettingRefused) -> None:
    """A session without views (``Session`` alone) says nothing of its settings."""


class GPUMon(Configurable):
    """nbgpumon settings. Change them live with ``%config GPUMon.<name> = value``."""

    device_source = Unicode(
        device_sources()[0].name,  # the built-in: the first registered
        help="The device source that reads the GPUs, by its registered name: "
        + ", ".join(f"{p.name!r} ({p.label})" for p in device_sources())
        + ", or a plug-in's, registered before %load_ext. Read when nbgpumon loads: set it "
        "before %load_ext nbgpumon.",
    ).tag(config=True)
    interval = Float(0.1, help="Seconds between samples of the fast metrics (0.01 to 60).").tag(
        config=True
    )
    allocator_interval = Float(
        0.5,
        help="Seconds between reads of the frameworks' allocator stats "
        f"({', '.join(f.label for f in frameworks())}) for the timeline (6-26 µs a framework "
        "and GPU on an H200; cell boundaries always read them).",
    ).tag(config=True)
    detail_interval = Float(
        1.0,
        help="Seconds between reads of temperature, power, SM clock and PCIe throughput "
        "(memory and utilization are read every interval).",
    ).tag(config=True)
    slow_interval = Float(
        2.0, help="Seconds between reads of process lists, power limit, system memory."
    ).tag(config=True)
    process_interval = Float(
        0.2,
        help="Seconds between looks at this kernel's child processes; while it has any, the "
        "GPUs' process lists are read this often too (a child's peak is the highest of them).",
    ).tag(config=True)
    idle_interval = Float(
        IDLE_INTERVAL,
        help="Seconds between samples while nothing moves: no cell running, no child process, "
        "every GPU idle with its memory unchanged and the kernel's RSS steady for "
        f"{QUIET_AFTER:g} s (the first change, or a cell, brings back interval); 0: always "
        "interval.",
    ).tag(config=True)
    peak_mode = Enum(
        PEAK_MODES,
        "reset",
        help="'reset': restart the frameworks' peak counters that can be restarted (and the "
        "peak-RSS mark) at each cell so every cell's peak is exact; a framework's own peak "
        "figure then counts from the current cell's start. 'preserve': never touch them; a "
        "cell's peak is exact only when it set a new process-wide high, otherwise a sampled "
        "lower bound.",
    ).tag(config=True)
    summary = Bool(False, help="Print a one-line summary after every cell.").tag(config=True)
    history = Int(10_000, help="Ledger records kept (oldest dropped first).").tag(config=True)
    leak_threshold = Int(
        64 * 2**20,
        help="Bytes a cell must keep (the frameworks' allocators, else host memory) before "
        "its ledger entry names who holds them, e.g. %config GPUMon.leak_threshold = 256 * 2**20; "
        "0 turns it off.",
    ).tag(config=True)
    record_path = Unicode(
        "",
        help="Record samples, cells and marks to this SQLite file (crash-safe; "
        "nbgpumon.load(PATH) reads it back); '' stops. Same as %gpumon record PATH|off.",
    ).tag(config=True)
    record_raw_seconds = Float(
        900.0,
        help="Seconds of the newest samples a recording keeps whole; older ones are folded "
        "into 1 min buckets (mean, min, max), so that a day of 8 GPUs stays under 200 MB. "
        "0 keeps every sample. Read when a recording starts.",
    ).tag(config=True)
    nvtx = Bool(
        False,
        help="An NVTX range around each cell ([N] first line) and each track() region "
        "([N] label) once the framework that pushes them has initialised CUDA, so that an "
        "Nsight Systems capture is labelled by cell. Same as %gpumon nvtx on|off.",
    ).tag(config=True)
    oom_report = Bool(
        True, help="Print a post-mortem under a cell that runs out of GPU memory."
    ).tag(config=True)
    # each framework plug-in's own settings (GPUMon.cupy_peak_hook is CuPy's), declared where
    # it declared them; a plug-in registered after this import has none
    vars().update(
        {s.name: Bool(s.default, help=s.help).tag(config=True) for _, s in plugin_settings()}
    )

    prometheus_url = Unicode(
        "",
        help="Read other nodes' GPUs from this Prometheus server (the DCGM exporter's metrics "
        "and nbgpumon's own exported ones), e.g. 'http://prometheus:9090'; '' stops. Same as "
        "%gpumon cluster URL|off.",
    ).tag(config=True)
    prometheus_match = Unicode(
        "",
        help="Label matchers that narrow what is read from Prometheus, as PromQL writes them, "
        "e.g. 'Hostname=~\"node-1.*\", job=\"dcgm\"'; '' reads every GPU series. Same as "
        "%gpumon cluster URL --match ....",
    ).tag(config=True)
    cluster_interval = Float(
        0.0,
        help="Seconds between reads of the Prometheus server; 0: its scrape interval (15 s "
        "when it does not say). Never faster than the scrape interval.",
    ).tag(config=True)

    cluster_host_label = Unicode(
        "Hostname",
        help="The label that names a GPU's node (the DCGM exporter's Hostname by default; e.g. "
        "'kubernetes_node' where a relabelling put the node's name there). A series without "
        "it is grouped by its Hostname, else by its scrape target's host.",
    ).tag(config=True)
    cluster_timeout = Float(
        5.0, help="Seconds to wait for the Prometheus server's answer before saying so (0.1 to 60)."
    ).tag(config=True)

    export_port = Int(
        0,
        help="Serve this kernel's metrics for Prometheus at http://HOST:PORT/metrics (HOST: "
        "export_host); 0 stops. Same as %gpumon export PORT|off; nbgpumon's usual port is 9476.",
    ).tag(config=True)
    export_host = Unicode(
        "127.0.0.1",
        help="The address the exporter listens on: '127.0.0.1' (this machine only) unless set; "
        "'0.0.0.0' is every interface, with no authentication: put it behind the cluster's "
        "network policy.",
    ).tag(config=True)

    # Where a ``%config``'s facts go (SettingOutcome, SettingRefused): the layer above (the
    # Monitor) words them and prints them in the user's cell; nothing listens by default.
    tell: Callable[[SettingOutcome | SettingRefused], None] = staticmethod(_nobody_listens)

    @classmethod
    def for_shell(
        cls, shell: Any, kept: dict[str, Any] | None = None
    ) -> tuple[GPUMon, list[SettingRefused]]:
        """The settings for ``shell`` as its configuration gives them (``ipython_config.py``, an
        earlier ``%config``). Then come ``kept`` (what an unloaded monitor was running with, from
        ``live_settings``), and each value refused or unknown. Such a value is taken out of the
        shell's configuration, and its setting keeps its default."""
        section = _own_section(getattr(shell, "config", None))
        refused: list[SettingRefused] = []
        if section:
            probe = cls()  # no parent: it holds only the defaults
            names = probe.trait_names(config=True)
            for name, value in list(section.items()):
                if name not in names:
                    fact = SettingRefused(name, True, _nearest(name), at_load=True)
                else:
                    try:
                        setattr(probe, name, value)
                    except TraitError as exc:
                        default = cls.class_traits()[name].default()
                        fact = SettingRefused(name, False, "", _reason(exc), default, True)
                    else:
                        continue
                del section[name]  # (before traitlets warns of an unknown name itself)
                refused.append(fact)
        config = cls(parent=shell)
        names = config.trait_names(config=True)
        for name, value in (kept or {}).items():
            if name in names:
                with contextlib.suppress(TraitError):  # (it held this value before)
                    setattr(config, name, value)
        return config, refused

    def forget(self, name: str) -> None:
        """Take ``name`` out of the shell's configuration, where a refused value would make
        the next ``%load_ext`` refuse it again."""
        section = _own_section(getattr(self.parent, "config", None))
        if section and name in section:
            del section[name]

    def live_settings(self) -> dict[str, Any]:
        """The settings that differ from what the shell's configuration gives (what the
        magics changed: ``%gpumon record``, ``export``, ``cluster``, ``summary``), for the next
        load to go on with. The shell's configuration itself stays what the user set."""
        section = _own_section(getattr(self.parent, "config", None)) or {}
        live = {}
        for name, trait in self.traits(config=True).items():
            value = getattr(self, name)
            configured = section[name] if name in section else trait.default()
            if value != configured:
                live[name] = value
        return live

    def update_config(self, config: Any) -> None:
        """Apply ``%config GPUMon.x = v`` (or a config file), one value at a time. A refused value
        is told (``tell``), its setting keeps its value, and it is taken out of ``config`` and the
        shell's configuration, so a later load does not meet it. (``%config`` would log the error
        through the root logger, which terminal IPython shows as "ERROR:root:", and merge the
        refused value into the shell's configuration.)"""
        section = _own_section(config)
        if not section:
            super().update_config(config)
            return
        names = self.trait_names(config=True)
        for name, value in list(section.items()):
            if name not in names:
                # traitlets would warn through its logger, and the shell would keep it
                del section[name]
                self.forget(name)
                self.tell(SettingRefused(name, True, _nearest(name)))
                continue
            try:
                super().update_config(Config({"GPUMon": {name: value}}))
            except TraitError as exc:
                # the shell merges the same ``config`` after this (its class sorts after
                # GPUMon in %config's loop); should it have merged already, forget() takes it out
                del section[name]
                self.forget(name)
                self.tell(SettingRefused(name, False, "", _reason(exc), getattr(self, name)))

    _device_source_taken = ""  # the one a session read ("": none yet): another is refused

    def take_device_source(self) -> str:
        """The device source's name, for the session starting now, which reads it once: from
        now on this configuration refuses another (it would not be used)."""
        self._device_source_taken = self.device_source
        return self.device_source

    @validate("device_source")
    def _check_device_source(self, proposal):
        value = proposal["value"]
        names = [p.name for p in device_sources()]
        if value not in names:
            raise TraitError(
                f"GPUMon.device_source is one of the registered device sources "
                f"({', '.join(map(repr, names))}), not {value!r}"
            )
        # (compared with the name taken: a config's values are checked once already set)
        taken = self._device_source_taken
        if taken and value != taken:
            raise TraitError(
                f"GPUMon.device_source is read when nbgpumon loads (to use {value!r}: "
                f"%unload_ext nbgpumon, set it, then %load_ext nbgpumon)"
            )
        return value

    @validate(*_RANGES)
    def _check_range(self, proposal):
        name, value = proposal["trait"].name, proposal["value"]
        allowed, says, example = _RANGES[name]
        if not allowed(value):
            raise TraitError(f"GPUMon.{name} {says}, not {value!r}{example.format(name=name)}")
        return value


def _own_section(config: Any) -> Any:
    """``config``'s GPUMon section, or None (without making one, as ``config.GPUMon`` would)."""
    if config is None or "GPUMon" not in config:
        return None
    return config["GPUMon"]


def _nearest(name: str) -> str:
    """The setting a mistyped ``name`` may mean ("" for none close enough)."""
    import difflib  # on a mistyped name only: not on the load's path

    known = GPUMon.class_trait_names(config=True)
    close = difflib.get_close_matches(name, known, n=1)
    return close[0] if close else ""


def _reason(exc: TraitError) -> str:
    # traitlets' own messages end in a full stop; the line goes on after it
    return str(exc).rstrip(".")
