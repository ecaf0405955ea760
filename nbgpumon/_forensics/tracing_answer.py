"""Whether allocation tracing is on, and what turning it on or off did, as facts (the words:
``_views/words/traced.py``; the tracer: ``tracing.py``)."""

from __future__ import annotations

from dataclasses import dataclass

ON, ARMED, OFF = "on", "armed", "off"  # TracingState.phase

# TracingAnswer.outcome
STARTED = "started"  # recording now
WAITING = "waiting"  # armed: it starts at the first cell after the framework initialises CUDA
ALREADY_ON = "already on"
REFUSED = "refused"  # not possible (``problem`` says why)
STOPPED = "stopped"  # off now
STOP_FAILED = "stop failed"  # off, but turning the framework's recorder off failed
WAS_NOT_ON = "was not on"


@dataclass(frozen=True, slots=True)
class TracingState:
    """Whether allocation tracing is on, armed (waiting for CUDA) or off, and its last
    problem."""

    phase: str  # ON, ARMED or OFF
    problem: str = ""  # the last failure's line, or why it could not start


@dataclass(frozen=True, slots=True)
class TracingAnswer:
    """What turning allocation tracing on or off did."""

    outcome: str  # STARTED, WAITING, ALREADY_ON, REFUSED, STOPPED, STOP_FAILED or WAS_NOT_ON
    recorder: str = ""  # the label of the plug-in whose memory recorder it uses ("torch")
    theirs: bool = False  # that recorder was on before nbgpumon: used as it is, left on
    problem: str = ""  # REFUSED: why; STOP_FAILED: what failed
