"""What a framework plug-in says about its own out-of-memory errors, as data: how its messages
give the bytes asked for and the device, and what gives memory back. The post-mortem
(``_forensics/postmortem.py``) reads these; an error is a framework's when its type comes from
the framework's module (``torch.…``, ``jaxlib…``, ``cupy_…``) or its message has ``wording``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


def _claims_none(exc: BaseException) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class OutOfMemory:
    """One framework's out-of-memory facts."""

    # the ledger's outcome: whether an error its class name does not give away
    # (``OutOfMemoryError``) is its out-of-memory error on the GPU
    claims: Callable[[BaseException], bool] = _claims_none

    # patterns for the bytes asked for, tried in turn: one group (a byte count, maybe with
    # commas) or two (a number and its unit: B, KiB … TiB, KB … TB)
    requested: tuple[re.Pattern[str], ...] = ()
    device: tuple[re.Pattern[str], ...] = ()  # patterns whose group is the CUDA index
    wording: str = ""  # a phrase that names this framework's error when its type does not
    # the fix for memory it holds but does not use: {size} the bytes (formatted), {other} " (…)"
    # when another framework is the one that ran out
    idle_fix: str = ""
    general_fix: str = ""  # the last fix offered when this framework ran out
