"""Put this process in the state a GPU notebook is in: CUDA initialised, tensors held.

nbgpumon reads torch's allocator only once the user's code has initialised CUDA, so the
benchmarks that measure those reads must do that first.
"""

from __future__ import annotations

from typing import Any


def hold_gpu_tensors(result: Any, part: str) -> list[Any]:
    """Initialise CUDA and hold tensors when a GPU is usable; else record ``part`` as skipped.

    ``result`` is the script's ``result_file.Result``. Returns the tensors to keep alive.
    """
    try:
        usable, why = cuda_usable()
    except ImportError as exc:
        usable, why = False, f"torch not importable ({exc})"
    if not usable:
        result.skip(part, why)
        return []
    return init_cuda_with_tensors()


def cuda_usable() -> tuple[bool, str]:
    """(True, "") when torch can use a GPU here, else (False, why not)."""
    import torch

    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}"
        return False, f"torch.cuda.is_available() is False ({build})"
    return True, ""


def init_cuda_with_tensors() -> list[Any]:
    """Initialise CUDA and allocate a few tensors on every visible GPU; keep the list alive.

    Mixed sizes (small-pool and large-pool blocks, one freed) so the allocator's counters are
    not trivially zero.
    """
    import torch

    torch.cuda.init()
    held: list[Any] = []
    for index in range(torch.cuda.device_count()):
        device = torch.device("cuda", index)
        held.append(torch.ones(1024, device=device))  # 4 KiB: small pool
        held.append(torch.ones(64, 1024, 1024, device=device))  # 256 MiB: large pool
        scratch = torch.empty(32, 1024, 1024, device=device)
        held.append(torch.zeros(3, 1000, device=device))
        del scratch  # leaves a cached, inactive block
        torch.cuda.synchronize(device)
    return held
