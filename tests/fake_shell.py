"""A stand-in for the IPython shell the holder walk reads (its namespace, output cache,
displayhook, stored traceback), a holder scan's result by name, and what torch tensors hold
as torch reports it, for the holder tests."""

from __future__ import annotations

from types import SimpleNamespace

from nbgpumon._forensics.holder_scan import HolderScan


def shell_with(**variables) -> SimpleNamespace:
    """A shell whose namespace holds ``variables`` and nothing hidden."""
    ns = {"Out": {}, "_": "", "__": "", "___": "", **variables}
    return SimpleNamespace(
        user_ns=ns,
        user_ns_hidden={"Out": ns["Out"], "_": "", "__": "", "___": ""},
        displayhook=SimpleNamespace(_="", __="", ___=""),
        InteractiveTB=SimpleNamespace(tb=None),
        last_execution_result=None,
    )


def by_name(scan: HolderScan) -> dict[str, int]:
    return {h.name: h.bytes for h in scan.holders}


def storage_bytes(tensors) -> int:
    """What torch ``tensors`` hold: each storage once, at its size."""
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())
