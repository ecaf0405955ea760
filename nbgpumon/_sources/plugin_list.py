"""A list of plug-ins by name, as the framework and the device-source registries keep theirs."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar


class _Named(Protocol):
    @property
    def name(self) -> str: ...


P = TypeVar("P", bound=_Named)


class PluginList(dict[str, P], Generic[P]):
    """Plug-ins by name, in registration order. Registering the same one again (a module
    imported twice, a reload) is a no-op; another under a taken name is a ValueError."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind  # what a plug-in is called in the error: "a device source"

    def register(self, plugin: P) -> P:
        known = self.get(plugin.name)
        if known is not None and known != plugin:
            raise ValueError(f"{self.kind} named {plugin.name!r} is registered already")
        self[plugin.name] = plugin
        return plugin

    def all(self) -> tuple[P, ...]:
        return tuple(self.values())
