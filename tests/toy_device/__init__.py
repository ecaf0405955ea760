"""A toy device source, as docs/recipes.md's "Add a device source" recipe makes one: a
package of its metrics (``metrics.py``), its source (``source.py``, the core protocol only: none
of the optional roles) and the one line below that registers it. Importing it
registers it for the whole process: import it in a child process or a kernel of its own
(tests/test_toy_device.py), so that the test process's registries stay the built-ins'.
"""

from __future__ import annotations

from nbgpumon._sources.devices import DevicePlugin, register_device_source

from .metrics import CADENCES, GIB, LABEL, SOURCE
from .source import ToyDevices

register_device_source(DevicePlugin(SOURCE, LABEL, ToyDevices, CADENCES))

__all__ = ["GIB", "ToyDevices"]
