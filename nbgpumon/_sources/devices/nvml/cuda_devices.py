"""Which CUDA index each NVML device has, without initialising CUDA.

NVML numbers devices in PCI bus order; CUDA numbers the devices that
``CUDA_VISIBLE_DEVICES`` leaves, in its own order. UUIDs are the common key. A GPU in MIG mode
is no CUDA device itself: CUDA sees one MIG device at most, the first one the variable names,
else the first MIG device of the first listed GPU in MIG mode (what nvitop reads it as too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .mig_devices import MigDevice

Migs = Sequence[Sequence[MigDevice] | None]  # per NVML index: its MIG devices, None: MIG off


@dataclass(frozen=True, slots=True)
class CudaView:
    """What ``CUDA_VISIBLE_DEVICES`` leaves the kernel."""

    cuda: dict[int, int]  # NVML index -> CUDA index
    mig: dict[int, int] = field(default_factory=dict)  # NVML index -> place in its MIG list
    note: str = ""  # for status: what was assumed or ignored ("" when nothing)


def cuda_view(uuids: list[str], migs: Migs, visible: str | None) -> CudaView:
    """The kernel's devices from NVML's GPU UUIDs, their MIG devices and
    ``CUDA_VISIBLE_DEVICES``. Integer entries are read as PCI bus order, which is NVML's;
    CUDA parses entries up to the first invalid one and ignores the rest, and so does this."""
    listed, note = _listed(uuids, migs, visible)
    chosen = next(((i, k) for i, k in listed if k is not None), None)
    if chosen is None:  # no MIG device named: a listed GPU in MIG mode gives its first one
        chosen = next(((i, 0) for i, _ in listed if migs[i]), None)
    if chosen is not None:
        i, k = chosen
        if len(listed) > 1 and not note:
            note = (
                f"CUDA uses one MIG device, {migs[i][k].uuid} (cuda:0); "
                "the other devices in CUDA_VISIBLE_DEVICES are not visible to this kernel"
            )
        return CudaView({i: 0}, {i: k}, note)
    mapping: dict[int, int] = {}
    for i, _ in listed:
        if migs[i] is None:  # a GPU in MIG mode without a MIG device is nothing to CUDA
            mapping[i] = len(mapping)
    return CudaView(mapping, {}, note)


def map_cuda_indices(uuids: list[str], visible: str | None) -> tuple[dict[int, int], str]:
    """Map NVML index -> CUDA index on a machine without MIG; the mapping and a note for
    status ("" when nothing is assumed)."""
    view = cuda_view(uuids, [None] * len(uuids), visible)
    return view.cuda, view.note


def map_by_uuid(nvml_uuids: list[str], cuda_uuids: list[str]) -> dict[int, int]:
    """Exact mapping once the framework can name its devices' UUIDs (a MIG device's is its
    ``MIG-`` UUID)."""
    wanted = {_bare(u): cuda for cuda, u in enumerate(cuda_uuids)}
    return {i: wanted[_bare(u)] for i, u in enumerate(nvml_uuids) if _bare(u) in wanted}


def _listed(
    uuids: list[str], migs: Migs, visible: str | None
) -> tuple[list[tuple[int, int | None]], str]:
    """The devices ``visible`` names, in its order, up to its first invalid entry: (NVML index,
    None) for a GPU, (NVML index, place in its MIG list) for a MIG device; and a note when a
    MIG entry names nothing here."""
    if visible is None:
        return [(i, None) for i in range(len(uuids))], ""
    listed: list[tuple[int, int | None]] = []
    for token in (t.strip() for t in visible.split(",")):
        if token.startswith("MIG-"):
            entry = _resolve_mig(token, uuids, migs)
        else:
            index = _resolve(token, uuids)
            entry = None if index is None else (index, None)
        if entry is None:
            if token.startswith("MIG-"):
                return listed, (
                    f"CUDA_VISIBLE_DEVICES names {token[:60]}, which is no MIG device of this "
                    "machine: CUDA sees no device from there on (nvidia-smi -L lists them)"
                )
            break
        if entry in listed:
            break
        listed.append(entry)
    return listed, ""


def _resolve(token: str, uuids: list[str]) -> int | None:
    if token.isdigit():
        index = int(token)
        return index if index < len(uuids) else None
    if token.startswith("GPU-") and len(token) > 4:
        matches = [i for i, u in enumerate(uuids) if u.startswith(token)]
        return matches[0] if len(matches) == 1 else None
    return None


def _resolve_mig(token: str, uuids: list[str], migs: Migs) -> tuple[int, int] | None:
    """``MIG-<uuid>`` (or a unique prefix of one), or the older ``MIG-GPU-<uuid>/<GPU
    instance>/<compute instance>``."""
    if token.startswith("MIG-GPU-") and "/" in token:
        gpu_uuid, _, ids = token.removeprefix("MIG-").partition("/")
        for i, uuid in enumerate(uuids):
            if uuid.lower() == gpu_uuid.lower():
                for k, m in enumerate(migs[i] or ()):
                    if f"{m.gpu_instance}/{m.compute_instance}" == ids:
                        return i, k
        return None
    wanted = token.lower()
    matches = [
        (i, k)
        for i, devices in enumerate(migs)
        for k, m in enumerate(devices or ())
        if len(token) > 4 and m.uuid.lower().startswith(wanted)
    ]
    return matches[0] if len(matches) == 1 else None


def _bare(uuid: str) -> str:
    return uuid.removeprefix("GPU-").removeprefix("MIG-").lower()
