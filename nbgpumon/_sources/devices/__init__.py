"""Device-source plug-ins: what the device itself says of each GPU. ``protocol``: the core every
source has and the optional roles; ``registry``: the plug-ins ``GPUMon.device_source`` chooses
from; ``nvml/``: the built-in (NVIDIA's driver library), imported here for its registration.
Nothing outside this package imports a plug-in's; everything else asks a
:class:`~.protocol.DeviceSource`."""

from __future__ import annotations

from .registry import (
    DevicePlugin,
    device_source,
    device_sources,
    register_device_source,
    source_maker,
)

# The built-in, imported for its registration: the first registered is the default.
from . import nvml as _nvml  # isort: skip

__all__ = [
    "DevicePlugin",
    "device_source",
    "device_sources",
    "register_device_source",
    "source_maker",
]  # fmt: skip
del _nvml
