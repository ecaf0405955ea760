"""What ``fit`` needs to measure exact peaks: CuPy's peak hook armed while it runs, and, for a
framework whose peaks were still only sampled, why, and what would make them exact."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session


@contextlib.contextmanager
def cupy_peak_hook(session: Session) -> Iterator[None]:
    """CuPy's memory hook armed on this thread for the block, if CuPy is imported and the hook
    is not armed already (``GPUMon.cupy_peak_hook``); disarmed after, as it was. It costs
    about 2.5 µs a CuPy allocation, paid only while ``fit`` runs."""
    cupy = session.cupy
    if cupy.peak_resettable:  # armed already, for every cell
        yield
        return
    wanted, cupy.hook_wanted = cupy.hook_wanted, True
    cupy.watch_thread()  # nothing while CuPy is not imported; arming needs no CUDA context
    try:
        yield
    finally:
        if cupy.peak_resettable:
            cupy.close()
        cupy.hook_wanted = wanted


def why_sampled(framework: str, peak_mode: str) -> str:
    """Why ``framework``'s peaks (or host memory's) were sampled lower bounds, and the remedy."""
    if framework == "jax":
        return (
            "JAX's peak counter is this process's high-water mark and cannot be reset, so a "
            "size's peak is exact only when it beats every earlier peak: run larger sizes, or "
            "fit in a fresh kernel"
        )
    if framework == "cupy":
        return "CuPy's memory hook could not be armed (see %gpumon status)"
    if framework == "torch" and peak_mode == "preserve":
        return "torch's peak counter is not reset per region: %config GPUMon.peak_mode = 'reset'"
    if framework == "host":
        return "the kernel's peak RSS mark could not be reset (/proc/self/clear_refs)"
    return f"{framework}'s allocator gives no peak counter that can be reset"
