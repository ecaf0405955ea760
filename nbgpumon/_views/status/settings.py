"""What a ``%config GPUMon.<name> = value`` did or refused, in words (printed in the user's
cell, after "nbgpumon: "), from the facts of ``_session/facts/settings.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._recording.notices import RecordingChange
from ..._session.facts.nvtx import NvtxAnswer
from ..._session.facts.session_data import ClusterState
from ..._session.facts.settings import SettingOutcome, SettingRefused
from .cluster import cluster_read_line
from .nvtx import nvtx_line
from .recorder import recording_change_line


def setting_line(fact: SettingOutcome | SettingRefused) -> str:
    """One line: what the setting started or stopped, or why the value was not taken."""
    if isinstance(fact, SettingRefused):
        return refused_line(fact)
    return _SAID_BY[type(fact.did)](fact.did)


# what each control's fact is worded by, as its own command says it (%gpumon record, …)
_SAID_BY: dict[type, Callable[[Any], str]] = {
    RecordingChange: recording_change_line,
    ClusterState: cluster_read_line,
    NvtxAnswer: nvtx_line,
}


def refused_line(fact: SettingRefused) -> str:
    """An unknown name (with the one it may mean) or a value refused, and what happens
    instead: nothing changed, the value kept, or (at load) the default used."""
    if fact.unknown:
        hint = (
            f" (did you mean GPUMon.{fact.nearest}?)"
            if fact.nearest
            else " (%config GPUMon lists them)"
        )
        instead = "it is ignored" if fact.at_load else "nothing was changed"
        return f"GPUMon.{fact.name} is not a setting{hint}; {instead}"
    if fact.at_load:
        return f"{fact.reason}; using the default, {fact.kept!r}"
    return f"{fact.reason}; GPUMon.{fact.name} stays {fact.kept!r}"
