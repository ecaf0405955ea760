"""What ``nbgpumon.fit`` is asked: its parameters, declared once.

``nbgpumon.fit`` and ``Monitor.fit`` take ``*args, **kwargs`` and show these parameters as
their own (``_foundation/forwarding.py``); ``size_fit.run_fit`` reads them. A module of its
own, without the fit's imports, so that ``import nbgpumon`` stays as light as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FitArguments:
    """One call of ``fit``: the step, the sizes to run it at, and how to judge what fits."""

    step: Callable[[int], Any]  # run once at each size, as a tracked region
    sizes: Iterable[int]  # run smallest first
    # bytes (or "40GiB") the step may grow by, or one by kind ("torch", "host"); None: what
    # each kind could take now
    limit: int | str | Mapping[str, int | str] | None = None
    margin: int | str | None = None  # bytes kept back from the limit; None: the default
    label: str = "fit"  # the regions' label: "fit size=64"
    warmup: bool = True  # one unmeasured call at the smallest size first
