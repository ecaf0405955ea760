"""Whether this process already has a CUDA context on a device, asked without making one.

CuPy answers for the *current* device, and making a device current (``cudaSetDevice``)
creates its context. So before reading CuPy's pool of device N, nbgpumon asks the driver
whether N's primary context (the one the runtime, and so torch, CuPy and JAX, share) is
active. The driver library is used only if something already loaded it (``RTLD_NOLOAD``), and
before anyone called ``cuInit`` its answer is "not initialised": nothing here loads, initialises
or creates anything.
"""

from __future__ import annotations

import ctypes
import os

_LIBRARY = "libcuda.so.1"
_SUCCESS = 0


class CudaContexts:
    """Asks the driver at every call (two calls, a few µs): a context can be released."""

    def __init__(self, library: str = _LIBRARY) -> None:
        self._library = library
        self._driver: ctypes.CDLL | None = None

    def _loaded_driver(self) -> ctypes.CDLL | None:
        if self._driver is None:
            try:  # RTLD_NOLOAD: a handle only if the process already loaded the library
                self._driver = ctypes.CDLL(self._library, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            except (OSError, AttributeError):
                return None
        return self._driver

    def active(self, ordinal: int) -> bool:
        """True when device ``ordinal`` (CUDA's numbering) has an active primary context."""
        driver = self._loaded_driver()
        if driver is None:
            return False
        try:
            device, flags, state = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
            if driver.cuDeviceGet(ctypes.byref(device), ctypes.c_int(ordinal)) != _SUCCESS:
                return False  # not initialised yet, or no such device
            status = driver.cuDevicePrimaryCtxGetState(
                device, ctypes.byref(flags), ctypes.byref(state)
            )
        except (AttributeError, OSError):
            return False
        return status == _SUCCESS and bool(state.value)
