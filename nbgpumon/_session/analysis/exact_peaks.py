"""What ``fit`` needs to measure exact peaks: each framework's exact-peak measure armed while it
runs (CuPy's peak hook). For a framework whose peaks were still only sampled, it says why, and what
would make them exact."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..._sources.frameworks import facts_of

if TYPE_CHECKING:
    from ..session import Session


@contextlib.contextmanager
def exact_peaks(session: Session) -> Iterator[None]:
    """The block run with every plug-in's exact-peak measure armed, each put back as it was after.
    That is ``Framework.exact_peaks``: CuPy's memory hook, at about 2.5 µs a CuPy allocation, paid
    only while ``fit`` runs."""
    with contextlib.ExitStack() as armed:
        for source in session.allocators:
            arm = facts_of(source.name).exact_peaks
            if arm is not None:
                armed.enter_context(arm(source))
        yield


def why_sampled(framework: str, peak_mode: str) -> str:
    """Why ``framework``'s peaks (or host memory's) were sampled lower bounds, and the remedy."""
    if framework == "host":
        return "the kernel's peak RSS mark could not be reset (/proc/self/clear_refs)"
    reason = facts_of(framework).why_sampled(peak_mode)
    return reason or f"{framework}'s allocator gives no peak counter that can be reset"
