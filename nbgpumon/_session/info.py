"""What a recording's session row says about this kernel: host, devices, driver, versions."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from .._foundation.version import __version__
from .._sources.devices.protocol import DeviceSource
from .._sources.frameworks import frameworks


def session_info(devices: DeviceSource) -> dict[str, Any]:
    """Host, PID, GPUs, driver and the versions of what is imported (nothing is imported)."""
    import platform  # when a recording starts, not on the load's path

    versions = {"nbgpumon": __version__, "python": platform.python_version()}
    for name in ("IPython", *(f.module for f in frameworks())):
        module = sys.modules.get(name)
        if module is not None:
            versions[name.lower()] = str(getattr(module, "__version__", "?"))
    gpus = [
        {"index": d.index, "cuda_index": d.cuda_index, "name": d.name, "uuid": d.uuid,
         "memory_total": d.memory_total,
         **({"mig": dataclasses.asdict(d.mig)} if d.mig is not None else {})}
        for d in devices.devices
    ]  # fmt: skip
    return {
        "host": platform.node(),
        "pid": os.getpid(),
        "gpus": gpus,
        "driver": devices.facts().driver_version or "",
        "versions": versions,
    }
