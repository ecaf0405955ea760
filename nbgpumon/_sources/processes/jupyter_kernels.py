# TEMPORARY stand-in until the naming branch lands (not committed)
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KernelIdentity:
    kernel_id: str | None
    notebook: str | None
    idle_seconds: float | None
    execution_state: str | None


class JupyterKernels:
    def __init__(self, runtime_dirs=None, refresh_every=30.0, timeout=1.0):
        pass

    def identify(self, pid, argv, environ):
        return None

    def close(self):
        pass
