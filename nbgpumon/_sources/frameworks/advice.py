"""What a framework plug-in gives ``%gpumon advise``, as data. It gives the pool hints it can
support from its own columns (memory its pool holds but its arrays do not use) and what it says
about training in full precision when memory is near the limit. The rules that test the numbers are
the session's (``_session/analysis/advice.py``); the words here are filled in by the view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PoolAdvice:
    """One hint about memory a framework's pool holds but does not use, on one GPU.

    ``test`` is how the samples are read: "worst" takes the sample where the pool held the
    most it did not use, and fires when that is at least ``min_idle`` bytes and ``min_share``
    of the pool; "most" compares the pool's largest sample with the arrays' largest, and
    fires when the pool held ``min_idle`` bytes more and at least ``min_times`` as much.
    Templates: ``{pool}``, ``{used}``, ``{idle}`` (bytes, formatted), ``{share}`` (idle over
    pool, a fraction), ``{during}`` (" during [N]" or "").
    """

    topic: str  # the hint's name, as users read it
    absent: str  # how "nothing to suggest" names it
    rank: int  # its place among the rules (the generic ones: 20, 30 and 40)
    test: str  # "worst" or "most"
    min_idle: int
    evidence: str
    advice: str
    min_share: float = 0.0
    min_times: float = 0.0
    pool: str = "reserved"  # the plug-in's metrics read: its pool and its arrays
    used: str = "allocated"
    split: str = ""  # a metric of bytes in split blocks, cited when at least min_idle
    split_evidence: str = ""  # template: {split}
    # the live allocator's retries (AllocatorStats.alloc_retries) are evidence too; template:
    # {retries} and {plural} ("y" or "ies")
    retries_evidence: str = ""


@dataclass(frozen=True, slots=True)
class PrecisionAdvice:
    """What to say about full precision when memory nears the limit."""

    # the user's models whose weights are float32 on a GPU, read from the shell (live only)
    full_precision_models: Callable[[Any], list[str]]
    evidence: str  # added when some were found; template: {names}
    advice: str  # when some were found
    otherwise: str  # the advice when none were found (or the session is a recording)
