"""What a device-source plug-in is, and the list of those registered.

A **device-source plug-in** is one package under ``_sources/devices/`` (NVML's: ``nvml/``, or
one of the user's, imported before ``%load_ext``) that registers its metrics in the metric
registry's DEVICE group and itself here, with one :func:`register_device_source` line. The
session makes the source that ``GPUMon.device_source`` names, through :func:`source_maker`;
nothing else imports a plug-in's package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from ..plugin_list import PluginList
from .protocol import DeviceSource


@dataclass(frozen=True, slots=True)
class DevicePlugin:
    """One device source's plug-in."""

    name: str  # its source's name: GPUMon.device_source's value, its columns' gpu0.<name>.…
    label: str  # how its users write it ("NVML")
    # a new, unopened source; the argument: the library module to use instead of the one the
    # source would import (the fault tests' fake pynvml), None for its own
    new_source: Callable[[ModuleType | None], DeviceSource]
    # the cadence (DETAIL, SLOW) of each metric not read every tick, by metric name: status
    # says which of its figures come at which interval
    cadences: Mapping[str, str] = field(default_factory=dict)


_plugins: PluginList[DevicePlugin] = PluginList("a device source")


def register_device_source(plugin: DevicePlugin) -> DevicePlugin:
    """Add ``plugin`` to the device sources ``GPUMon.device_source`` may name; registering
    the same one again (a reload) is a no-op, another under a taken name a ValueError."""
    return _plugins.register(plugin)


def device_sources() -> tuple[DevicePlugin, ...]:
    """The registered plug-ins, in registration order (the built-in, NVML, first)."""
    return _plugins.all()


def device_source(name: str) -> DevicePlugin | None:
    """The plug-in registered as ``name``; None for none."""
    return _plugins.get(name)


def source_maker(name: str, library: ModuleType | None = None) -> Callable[[], DeviceSource]:
    """What makes the source registered as ``name`` (a new one at each call: the session may
    need a second, never-opened one); a LookupError names the registered ones."""
    plugin = _plugins.get(name)
    if plugin is None:
        known = ", ".join(repr(p.name) for p in _plugins.all()) or "none"
        raise LookupError(f"no device source named {name!r} is registered (registered: {known})")
    return lambda: plugin.new_source(library)
