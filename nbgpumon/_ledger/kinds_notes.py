"""How a cell's memory by kind was read, as facts its record keeps (``DeviceUsage.kinds_note``),
and the holder scan's cut short (``HolderScan.partial``, ``Retention.note``). The views word
them (``_views/memory/explain.py``, ``_views/memory/holders.py``); a recording keeps them as
JSON objects. A recording older than schema 7 kept each as text: it loads as that text, shown
as it is."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class ScanCut:
    """The holder scan stopped at its time budget, so some holders may be missing."""

    budget: float  # seconds it was given
    objects: int  # objects it had looked at by then


@dataclass(frozen=True, slots=True)
class CarriedOver:
    """A cell's kinds are the last read's, carried over without a walk: it moved no allocator
    and bound no name, or (``bound_names``) it allocated nothing and what it bound holds none
    of the GPU's memory."""

    bound_names: bool


@dataclass(frozen=True, slots=True)
class ScanFoundMore:
    """The scan found more of a framework's memory than its allocator counts in use: the two
    were read moments apart (never shown as a negative category)."""

    framework: str  # its plug-in's label ("torch", "JAX")
    bytes: int  # how much more


@dataclass(frozen=True, slots=True)
class KindsReadFailed:
    """Reading the cell's memory by kind failed: its breakdown is what is lost."""

    error: str  # "ErrorType: first line of its message"


# An item of ``DeviceUsage.kinds_note``; a str is a recording's note from before they were data.
KindsNote = ScanCut | CarriedOver | ScanFoundMore | KindsReadFailed | str

# which fact a JSON object is, by its keys (each fact's fields differ from the others')
_BY_KEYS: dict[frozenset[str], Any] = {
    frozenset(f.name for f in fields(kind)): kind
    for kind in (ScanCut, CarriedOver, ScanFoundMore, KindsReadFailed)
}


def note_from_json(item: Any) -> KindsNote:
    """A note as ``dataclasses.asdict`` wrote it back into its fact; text stays as it is. An
    object of keys no fact has raises KeyError (the reader counts that record unreadable)."""
    if isinstance(item, dict):
        return _BY_KEYS[frozenset(item)](**item)
    return str(item)


def kinds_notes_from_json(value: Any) -> tuple[KindsNote, ...]:
    """``kinds_note`` as a recording holds it: a list of notes, or (schema 6) one line of
    text, "" for none."""
    if isinstance(value, str):
        return (value,) if value else ()
    items: Iterable[Any] = value or ()
    return tuple(note_from_json(item) for item in items)


def scan_cut_from_json(value: Any) -> ScanCut | str | None:
    """``Retention.note`` as a recording holds it: the cut, or (before schema 7) its words,
    "" or null for a whole scan."""
    if not value:
        return None
    note = note_from_json(value)
    return note if isinstance(note, ScanCut | str) else str(value)
