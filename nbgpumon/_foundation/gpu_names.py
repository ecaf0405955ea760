"""How every view names one of this machine's GPUs. It gives its physical identity (NVML's index, in
PCI bus order, and its name), then the kernel's name for it (``cuda:N``) or, for a GPU that
``CUDA_VISIBLE_DEVICES`` hides, that this kernel cannot see it. A MIG device is its GPU's index and
its GPU instance, ``gpu0-mig1``, as the cluster view names DCGM's instances. One wording, from here,
so the status, the snapshot, the summary line, the cells table, the chart, the picture, the report
and the exporter agree."""

from __future__ import annotations

from collections.abc import Iterable

NOT_VISIBLE = "not visible to this kernel"


def cuda_label(cuda_index: int | None) -> str:
    """The kernel's name for a GPU, ``cuda:0``, or ``not visible to this kernel`` for a hidden GPU
    (``cuda_index`` None)."""
    return NOT_VISIBLE if cuda_index is None else f"cuda:{cuda_index}"


def gpu_key(index: int, gpu_instance: int | None = None) -> str:
    """A GPU's key, ``gpu1``; ``gpu0-mig1`` for GPU instance 1 of GPU 0 (a MIG device)."""
    return f"gpu{index}" if gpu_instance is None else f"gpu{index}-mig{gpu_instance}"


def gpu_label(
    index: int,
    name: str,
    cuda_index: int | None,
    known: bool = True,
    gpu_instance: int | None = None,
) -> str:
    """A GPU's full label, its key, name and the kernel's name for it. It reads
    ``gpu1 NVIDIA H200 (cuda:0)``; ``gpu0 NVIDIA H200 (not visible to this kernel)``;
    ``gpu0 NVIDIA H200`` where the kernel's numbering is not ``known`` (a recording that does not
    say it); ``gpu0-mig1 NVIDIA H200 MIG 1g.18gb (cuda:0)`` for a MIG device (NVML's name of one
    names its GPU, once)."""
    named = f"{gpu_key(index, gpu_instance)} {name}".rstrip()
    return f"{named} ({cuda_label(cuda_index)})" if known else named


def gpu_short_label(index: int, cuda_index: int | None) -> str:
    """A GPU's label without its name, ``gpu1 (cuda:0)``, for where the name is already said (a
    cell's figures per device)."""
    return f"gpu{index} ({cuda_label(cuda_index)})"


def hidden_gpus(indices: Iterable[int]) -> str:
    """The GPUs hidden from this kernel, ``gpu0, gpu2 not visible to this kernel``; "" for none."""
    names = [f"gpu{i}" for i in indices]
    return f"{', '.join(names)} {NOT_VISIBLE}" if names else ""
