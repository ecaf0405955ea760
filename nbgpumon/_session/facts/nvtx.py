"""Whether NVTX cell ranges are on, and what turning them on or off did, as facts (the
words: ``_views/status/nvtx.py``; the ranges: ``controls/nvtx_ranges.py``)."""

from __future__ import annotations

from dataclasses import dataclass

ASKED_ON, ASKED_OFF, ASKED_STATE = "on", "off", "state"  # NvtxAnswer.asked


@dataclass(frozen=True, slots=True)
class NvtxState:
    """Whether NVTX cell ranges are on (the views word it: ``_views/status/nvtx.py``)."""

    on: bool
    waiting_for: str = ""  # on, but no range until this framework initialises CUDA: its label
    problem: str = ""  # the last failure, or why they could not start


@dataclass(frozen=True, slots=True)
class NvtxAnswer:
    """What turning NVTX ranges on or off (or asking) did: ``asked`` (ASKED_ON, ASKED_OFF,
    ASKED_STATE), the state after it, whether they were on before (off), and why they could
    not start (on)."""

    asked: str
    state: NvtxState
    was_on: bool = False
    refused: str = ""
