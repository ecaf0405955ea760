"""What a ``%config GPUMon.<name> = value`` (or the shell's configuration at load) did, as
facts: a setting that started or stopped something, a value not taken. The layer above words
them (``_views/status/settings.py``) and prints them in the user's cell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SettingOutcome:
    """What setting ``GPUMon.<name>`` started or stopped: ``did`` is the control's own fact
    (a ``RecordingChange``, a ``ClusterState`` or an ``NvtxAnswer``)."""

    name: str
    did: Any


@dataclass(frozen=True, slots=True)
class SettingRefused:
    """A ``GPUMon`` value not taken. It is an unknown name (``nearest``: the known one it may mean,
    "" for none) or a value out of range (``reason``: the setting's own words, a sentence of the
    refusal as ``%config`` raises it). ``kept``: what the setting keeps (its default at load);
    ``at_load``: found in the shell's configuration when the extension loaded."""

    name: str
    unknown: bool
    nearest: str = ""
    reason: str = ""
    kept: Any = None
    at_load: bool = False
