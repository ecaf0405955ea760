"""Amounts of bytes as numbers: the unit a figure is said in (``byte_unit``) and amounts the user
writes ("40GiB") read back (``parse_bytes``). The views' ``wording.format_bytes`` and a chart's axis
share ``byte_unit``. The words themselves are ``wording.py``'s."""

from __future__ import annotations

import re

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_PARSE_UNITS = {
    "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}  # fmt: skip
_AMOUNT = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)


def byte_unit(n: float) -> tuple[str, int]:
    """The unit ``wording.format_bytes`` says ``n`` bytes in, and its size in bytes: the
    largest of B, KiB, MiB, GiB, TiB that ``n`` reaches one of (``("MiB", 2**20)`` from 1 MiB
    to 1 GiB). A chart's axis takes its peak's, so that its ticks read in the unit the table
    beside it uses."""
    value, unit = float(abs(n)), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return _UNITS[unit], 1024**unit


def parse_bytes(text: str | int) -> int:
    """The bytes an amount the user writes stands for: ``"40GiB"``, ``"1.5 GB"``, ``"512 MiB"`` or a
    number of bytes. Raises ``ValueError`` for anything else (a negative amount, an unknown
    unit)."""
    if isinstance(text, bool):
        raise ValueError(f"not an amount of bytes: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a negative amount of bytes: {text}")
        return text
    match = _AMOUNT.fullmatch(text) if isinstance(text, str) else None
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in _PARSE_UNITS):
        raise ValueError(f"not an amount of bytes: {text!r} (say 40GiB, 512 MiB or 1.5 GB)")
    return int(float(match.group(1)) * _PARSE_UNITS[unit or "b"])
