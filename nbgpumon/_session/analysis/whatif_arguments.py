"""What ``nbgpumon.whatif`` is asked: its parameters, declared once.

``nbgpumon.whatif`` and ``Monitor.whatif`` take ``*args, **kwargs`` and show these parameters
as their own (``_foundation/forwarding.py``); ``whatif.run_whatif`` reads them. A module of its
own, without the run's imports, so that ``import nbgpumon`` stays as light as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WhatifArguments:
    """One call of ``whatif``: the step, the fixes to try on it, and what it works on."""

    step: Callable[..., Any]  # of no argument, or of the batch size where ``size`` is given
    fixes: Iterable[str] | str | None = None  # names; None: every fix (accumulate=2 with a size)
    size: int | None = None  # the step's batch size, passed to it
    model: Any = None  # the module the fixes work on; None: the one of the most parameters
    restore: bool = True  # the step's state copied to the host and put back after each run
