"""A GPU's MIG devices, as NVML lists them. Each is a compute instance of a GPU instance, with its
own UUID (``MIG-…``, what ``CUDA_VISIBLE_DEVICES`` takes), its own memory and a handle that memory
reads take. Asked once, when NVML starts; a GPU that cannot do MIG, or a driver without the calls,
has none, and says nothing about it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .library import NA, NvmlLibrary

_MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE


@dataclass(frozen=True, slots=True)
class MigDevice:
    """One MIG device of a GPU."""

    handle: object
    mig_index: int  # NVML's index of it among its GPU's MIG devices
    uuid: str  # "MIG-…"
    name: str  # "NVIDIA H200 MIG 1g.18gb": NVML names a MIG device by its GPU and profile
    profile: str  # "1g.18gb": DCGM's GPU_I_PROFILE
    gpu_instance: int | None  # DCGM's GPU_I_ID; None where NVML would not say
    compute_instance: int | None
    memory_total: int | None  # bytes: the instance's, not the GPU's


def mig_devices(lib: NvmlLibrary, handle: object) -> list[MigDevice] | None:
    """The MIG devices of the GPU ``handle``, in NVML's order; None when MIG mode is off (or
    the GPU or driver cannot do MIG), [] when it is on but no instance is made."""
    mode = lib.probe("nvmlDeviceGetMigMode", handle)
    if mode is NA or not isinstance(mode, list | tuple) or mode[0] != _MIG_ENABLED:
        return None
    count = lib.probe("nvmlDeviceGetMaxMigDeviceCount", handle)
    found = []
    for k in range(count if isinstance(count, int) else 0):
        mig = lib.probe("nvmlDeviceGetMigDeviceHandleByIndex", handle, k)
        if mig is NA:
            continue  # no MIG device at this index: NVML's indices may have gaps
        uuid = _text(lib.probe("nvmlDeviceGetUUID", mig))
        if uuid is None:
            continue  # a device that cannot be named cannot be matched to CUDA's either
        name = _text(lib.probe("nvmlDeviceGetName", mig)) or f"MIG device {k}"
        memory = lib.probe("nvmlDeviceGetMemoryInfo", mig)
        found.append(
            MigDevice(
                handle=mig,
                mig_index=k,
                uuid=uuid,
                name=name,
                profile=profile_of(name),
                gpu_instance=_int(lib.probe("nvmlDeviceGetGpuInstanceId", mig)),
                compute_instance=_int(lib.probe("nvmlDeviceGetComputeInstanceId", mig)),
                memory_total=None if memory is NA else int(memory.total),
            )
        )
    return found


def profile_of(name: str) -> str:
    """The MIG profile a device's name carries, ``1g.18gb`` from ``NVIDIA H200 MIG 1g.18gb`` (how
    NVML and nvidia-smi name a MIG device, and what DCGM calls its GPU instance); "" when the name
    carries none."""
    head, found, profile = name.rpartition("MIG ")
    if not found or (head and not head.endswith(" ")):
        return ""
    return profile.strip()


def _int(value: object) -> int | None:
    # NVML answers UINT_MAX for "not applicable"
    return value if isinstance(value, int) and 0 <= value < 0xFFFFFFFF else None


def _text(value: object) -> str | None:
    if value is NA or value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
