"""Which CUDA index each NVML device has, without initialising CUDA.

NVML numbers devices in PCI bus order; CUDA numbers the devices that
``CUDA_VISIBLE_DEVICES`` leaves, in its own order. UUIDs are the common key.
"""

from __future__ import annotations


def map_cuda_indices(uuids: list[str], visible: str | None) -> tuple[dict[int, int], str]:
    """Map NVML index -> CUDA index from NVML UUIDs and ``CUDA_VISIBLE_DEVICES``.

    Returns the mapping and a note for status ("" when nothing is assumed). Integer entries
    are read as PCI bus order, which is NVML's; CUDA parses entries up to the first invalid
    one and ignores the rest, and so does this.
    """
    if visible is None:
        return {i: i for i in range(len(uuids))}, ""
    mapping: dict[int, int] = {}
    note = ""
    for token in (t.strip() for t in visible.split(",")):
        nvml_index = _resolve(token, uuids)
        if nvml_index is None or nvml_index in mapping:
            if token.startswith("MIG-"):
                note = "MIG devices in CUDA_VISIBLE_DEVICES are not mapped to NVML devices"
            break
        mapping[nvml_index] = len(mapping)
    return mapping, note


def map_by_uuid(nvml_uuids: list[str], cuda_uuids: list[str]) -> dict[int, int]:
    """Exact mapping once the framework can name its devices' UUIDs."""
    wanted = {_bare(u): cuda for cuda, u in enumerate(cuda_uuids)}
    return {i: wanted[_bare(u)] for i, u in enumerate(nvml_uuids) if _bare(u) in wanted}


def _resolve(token: str, uuids: list[str]) -> int | None:
    if token.isdigit():
        index = int(token)
        return index if index < len(uuids) else None
    if token.startswith("GPU-") and len(token) > 4:
        matches = [i for i, u in enumerate(uuids) if u.startswith(token)]
        return matches[0] if len(matches) == 1 else None
    return None


def _bare(uuid: str) -> str:
    return uuid.removeprefix("GPU-").lower()
