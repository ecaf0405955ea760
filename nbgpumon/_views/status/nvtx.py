"""NVTX cell ranges in words: ``%gpumon nvtx on|off``, ``%config GPUMon.nvtx`` and the line in
``%gpumon status``, from the facts of ``_session/facts/nvtx.py``."""

from __future__ import annotations

from ..._session.facts.nvtx import ASKED_OFF, ASKED_STATE, NvtxAnswer, NvtxState

ON = (
    "NVTX ranges on: each cell is a range named [N] first line, each track() region "
    "[N] label, in an Nsight Systems capture (nsys profile -t cuda,nvtx jupyter lab)"
)


def nvtx_state_words(state: NvtxState) -> str:
    """ "on", "on (waiting for torch to initialise CUDA)" or "off", and the last problem."""
    if not state.on:
        words = "off"
    elif state.waiting_for:
        words = f"on (waiting for {state.waiting_for} to initialise CUDA)"
    else:
        words = "on"
    return f"{words} ({state.problem})" if state.problem else words


def nvtx_line(answer: NvtxAnswer) -> str:
    """What turning NVTX ranges on or off (or asking whether they are) did, in one line."""
    if answer.asked == ASKED_STATE:
        return f"NVTX ranges are {nvtx_state_words(answer.state)}"
    if answer.asked == ASKED_OFF:
        return "NVTX ranges off" if answer.was_on else "NVTX ranges were not on"
    if answer.refused:
        return f"NVTX ranges not possible: {answer.refused}"
    if answer.state.waiting_for:
        return (
            f"{ON}; they begin at the first cell after {answer.state.waiting_for} initialises CUDA"
        )
    return ON
