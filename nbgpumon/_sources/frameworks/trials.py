"""What a framework plug-in gives a what-if run: the model, the fixes and a trial's state.

That is the model a step trains, the fixes the framework can try on it, and a host copy of
what a trial may change; the session runs the trials and measures them, a view shows them."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class TrialTarget:
    """What a step's trials work on: its model (None where none was found) and that model's
    name in the namespace ("" for one given by the user), the optimizers that hold its
    parameters, what else keeps state of them (a GradScaler, a scheduler), and where its
    parameters live (``device_type`` "cuda", "cpu"; ``cuda_index`` on a GPU)."""

    model: Any
    model_name: str = ""
    optimizers: tuple[Any, ...] = ()
    others: tuple[Any, ...] = ()
    device_type: str = "cuda"
    cuda_index: int | None = None
    # a compiled model (torch.compile's wrapper): a fix that changes ``.training`` or the
    # dtypes makes it compile again, in the run before each measured one
    compiled: bool = False


@dataclass(frozen=True, slots=True)
class RunMemory:
    """What a trial's run holds just after it, bytes on the step's device (None: not known):
    the model's weights (parameters and buffers), its gradients, its optimizers' state, and the
    framework's reserved high-water mark since the run began (its cache included)."""

    weights: int | None = None
    gradients: int | None = None
    optimizer_state: int | None = None
    reserved_peak: int | None = None


class Fix(Protocol):
    """One fix a framework can try on a step."""

    name: str
    # what it lowers, as the advice finds it: "activations" (and temporaries) or "cache"
    # (reserved but unused): the hints that name such a fix quote what it saved
    relieves: str

    def why_not(self, target: TrialTarget) -> str:
        """ "" where the fix applies to ``target``, else why not, in a few words."""
        ...

    def applied(self, target: TrialTarget) -> contextlib.AbstractContextManager[str]:
        """A block in which the fix is on; what it yields: what to know of the run ("" for
        nothing). Leaving the block undoes it, also on an error."""
        ...

    def refused(self, error: BaseException) -> str:
        """Why the step cannot run under the fix, where ``error`` says so; "" otherwise."""
        ...

    # Optionally, ``if_no_saving``: another fix to try where this one lowered the step's peak
    # by under NO_SAVING (autocast's weight-cast cache can take what its casts saved); it
    # can also be asked for by its name.


NO_SAVING = 0.05  # a fix that lowered the peak by less than this fraction saved next to nothing


class TrialState(Protocol):
    """A host copy of what a trial may change."""

    def nbytes(self) -> int:
        """Bytes of host memory the copy takes."""
        ...

    def restore(self) -> None:
        """Put everything back as it was when the copy was made."""
        ...


class Trials(Protocol):
    """One framework's side of a what-if run."""

    fixes: tuple[Fix, ...]

    def target(self, namespace: Mapping[str, Any], model: Any = None) -> TrialTarget:
        """The step's model (``model``, or the namespace's module of the most parameters),
        its optimizers and the rest; ValueError, in one line, where ``model`` is not one."""
        ...

    def state(self, target: TrialTarget) -> TrialState:
        """A host copy of what ``target``'s trials may change, made now."""
        ...

    def synchronize(self, target: TrialTarget) -> None:
        """Wait until ``target``'s device has done the work queued on it (a step's time)."""
        ...

    def memory(self, target: TrialTarget) -> RunMemory:
        """What ``target`` holds now, by kind, and the reserved peak since the last reset of
        the framework's peak counters (a run's region resets them at its start)."""
        ...
