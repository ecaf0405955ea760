"""A session's devices as views read them (``SessionData.devices``, status), live or recorded."""

from __future__ import annotations

from dataclasses import dataclass

from ..._foundation import gpu_names


@dataclass(frozen=True, slots=True)
class MigInstance:
    """Where a MIG device is: its GPU (named once, here) and its instances."""

    gpu_name: str  # "NVIDIA H200"
    gpu_uuid: str  # "GPU-…"
    profile: str  # "1g.18gb" (DCGM's GPU_I_PROFILE)
    gpu_instance: int | None  # DCGM's GPU_I_ID
    compute_instance: int | None

    @classmethod
    def recorded(cls, value: object) -> MigInstance | None:
        """What a recording's GPU entry says of its MIG device: None for none, and for
        anything not shaped like one (a damaged or foreign file)."""
        if not isinstance(value, dict):
            return None

        def number(key: str) -> int | None:
            got = value.get(key)
            return got if isinstance(got, int) and not isinstance(got, bool) else None

        text = {key: str(value.get(key, "")) for key in ("gpu_name", "gpu_uuid", "profile")}
        return cls(
            **text, gpu_instance=number("gpu_instance"), compute_instance=number("compute_instance")
        )


@dataclass(frozen=True, slots=True)
class Device:
    """One GPU of the session, by its NVML index; for a GPU in MIG mode, the MIG device of it
    this kernel runs on, where there is one (``mig``: its name, UUID and memory are the MIG
    device's)."""

    index: int
    name: str
    memory_total: int | None = None  # bytes
    cuda_index: int | None = None  # None: CUDA_VISIBLE_DEVICES hides it from the kernel
    uuid: str = ""
    cuda_known: bool = True  # False: a recording that does not say the kernel's numbering
    mig: MigInstance | None = None
    unavailable: tuple[str, ...] = ()  # NVML metrics it cannot give ("gpu_util" on a MIG device)

    @property
    def key(self) -> str:
        """The device's key, ``gpu1``, or ``gpu0-mig1`` for a MIG device."""
        return gpu_names.gpu_key(self.index, self.mig.gpu_instance if self.mig else None)

    @property
    def label(self) -> str:
        """The device's label, ``gpu1 NVIDIA H200 (cuda:0)``, or ``(not visible to this kernel)``;
        ``gpu0-mig1 NVIDIA H200 MIG 1g.18gb (cuda:0)`` for a MIG device."""
        return gpu_names.gpu_label(
            self.index,
            self.name,
            self.cuda_index,
            self.cuda_known,
            self.mig.gpu_instance if self.mig else None,
        )

    @property
    def cuda_label(self) -> str:
        """The kernel's name for the device, ``cuda:0``, ``not visible to this kernel``, or "" when
        not known."""
        return gpu_names.cuda_label(self.cuda_index) if self.cuda_known else ""
