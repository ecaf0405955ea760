"""What ``whatif`` does: runs a step once to warm up, once as it is, then once under each fix, each
run a tracked region, and returns each run's exact peak on the step's GPU and its time.

Each fix's measured run follows an unmeasured one under it, so that its time leaves out what a
first use costs (a kernel's first launch, an import, a new shape).

The fixes are a framework plug-in's (``Framework.trials``: mixed precision, checkpointing, ...),
beside ``accumulate=K``, which needs none: the step at ``size // K``, its peak one micro-batch's
and its time K of them. Everything a run may change is copied to the host first and put back
after each run, also one that raises or runs out of memory. What it concludes is facts (each
row's note, why a fix did not apply) that the views word.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._foundation.errors import UsageError, exception_line
from ..._ledger.measured_fixes import REGION
from ..._ledger.outcome import is_out_of_memory
from ..._sources.frameworks import frameworks
from ..._sources.frameworks.trials import NO_SAVING, Fix, RunMemory, Trials, TrialTarget
from .exact_peaks import exact_peaks
from .whatif_arguments import WhatifArguments

if TYPE_CHECKING:
    from ..._ledger.records import CellRecord
    from ..session import Session

BASELINE = "baseline"
ACCUMULATE = "accumulate"
DEFAULT_STEPS = 2  # accumulate's K where none is given


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One run of the step: ``fix`` (``baseline`` for the step as it is), whether it ran under
    the fix (``applied``; else ``note`` says why not), its exact peak allocated on the step's
    GPU by every framework together (bytes; None: not run, or no GPU figure), its time
    (seconds, for ``accumulate=K`` K micro-batches'), what to know of it (``note``) and the
    ledger's record of its region (``record``: None where it did not run)."""

    fix: str
    applied: bool
    peak: int | None = None
    seconds: float | None = None
    note: str = ""
    exact: bool = False  # the peak came from the allocators' counters
    out_of_memory: bool = False
    record: int | None = None  # the region's record index, ``whatif amp`` in the ledger
    # what the peak is made of, bytes on the step's GPU (None: not known): the part of it
    # freed by the run's end (activations and temporaries), and what the model held then
    activations: int | None = None
    weights: int | None = None
    gradients: int | None = None
    optimizer_state: int | None = None
    # the framework's reserved high-water mark in the run (its cache and fragmentation too)
    reserved_peak: int | None = None


@dataclass(frozen=True, slots=True)
class WhatifRun:
    """Everything ``whatif`` measured: the baseline, each fix's row, the model it worked on
    (its name, "" for one given), the host copy's size (None: ``restore=False``) and the GPU
    measured (``cuda_index``; None: the model is not on one)."""

    label: str
    baseline: TrialRow
    rows: tuple[TrialRow, ...]
    model_name: str
    model_type: str
    state_bytes: int | None
    cuda_index: int | None
    size: int | None
    compiled: bool = False  # the model is compiled: each fix's unmeasured run recompiles it


@dataclass(frozen=True, slots=True)
class _Asked:
    """A fix as asked: a plug-in's (``fix``) or accumulate's ``steps``."""

    name: str
    fix: Fix | None = None
    steps: int = 0


def run_whatif(session: Session, asked: WhatifArguments) -> WhatifRun:
    """Run ``asked.step`` as it is and under each fix; see ``nbgpumon.whatif``."""
    step, size = asked.step, asked.size
    if not callable(step):
        raise UsageError("whatif(step) takes the function that runs one step: whatif(train_step)")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise UsageError(
            f"whatif: size= is the step's batch size, a positive whole number, not {size!r}"
        )
    if not session.device_source.devices:
        raise UsageError("whatif measures a step's GPU memory, and this machine shows no GPU")
    trials = _trials()
    namespace = _namespace(session, step)
    try:
        target = trials.target(namespace, asked.model)
    except ValueError as exc:
        raise UsageError(f"whatif: {exc}") from None
    if target.model is None:
        raise UsageError("whatif found no model in the namespace: pass it, whatif(step, model=net)")
    to_run = _asked_fixes(trials, asked.fixes, size)
    label = getattr(step, "__name__", "step")
    state = trials.state(target) if asked.restore else None
    call = _caller(step, size)
    with exact_peaks(session):
        # compiles, builds workspaces: unmeasured
        failure = _unmeasured(call, None, trials, target, state, "the warm-up")
        if failure is not None:
            raise failure
        baseline = _trial(session, BASELINE, call, None, trials, target, state, warm=False)
        rows: list[TrialRow] = []
        asked_names = {fix.name for fix in to_run}
        for fix in to_run:
            row = _trial_of(session, fix, step, size, trials, target, state)
            rows.append(row)
            then = _if_no_saving(fix.fix)
            if then is not None and then.name not in asked_names and _no_saving(row, baseline):
                rows.append(_trial_of(session, _Asked(then.name, then), step, size, trials,
                                      target, state))  # fmt: skip
    return WhatifRun(
        label=label,
        baseline=baseline,
        rows=tuple(rows),
        model_name=target.model_name,
        model_type=type(target.model).__name__,
        state_bytes=state.nbytes() if state is not None else None,
        cuda_index=target.cuda_index,
        size=size,
        compiled=target.compiled,
    )


def _trials() -> Trials:
    """The trials of the framework the user imported that has them (torch's)."""
    having = [f for f in frameworks() if f.trials is not None]
    for plugin in having:
        if plugin.module in sys.modules and plugin.trials is not None:
            return plugin.trials
    names = " or ".join(f.label for f in having) or "a framework with fixes to try"
    raise UsageError(f"whatif tries fixes on a {names} step: import it and build the model first")


def _namespace(session: Session, step: Callable[..., Any]) -> dict[str, Any]:
    """Where the step's model and optimizers are: the notebook's namespace, the step's own
    module's, and the variables it closes over (a step defined inside a function), and those
    of the functions among them, a few levels down."""
    found: dict[str, Any] = {}
    user_ns = getattr(session.shell(), "user_ns", None)
    if isinstance(user_ns, dict):
        found.update(user_ns)
    function = getattr(step, "__func__", step)
    module_ns = getattr(function, "__globals__", None)
    if isinstance(module_ns, dict) and module_ns is not user_ns:
        found.update(module_ns)
    found.update(_closed_over(function, CLOSURE_DEPTH))
    return found


CLOSURE_DEPTH = 3  # functions inside functions whose variables are looked at


def _closed_over(function: Any, depth: int) -> dict[str, Any]:
    """The variables ``function`` closes over, and those of the functions among them."""
    found: dict[str, Any] = {}
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    for name, cell in zip(getattr(code, "co_freevars", ()), cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:  # (a variable not bound yet)
            continue
        if depth > 1 and getattr(value, "__code__", None) is not None:
            for inner, inner_value in _closed_over(value, depth - 1).items():
                found.setdefault(inner, inner_value)
        found[name] = value
    return found


def _asked_fixes(
    trials: Trials, fixes: Iterable[str] | str | None, size: int | None
) -> list[_Asked]:
    """The fixes to run, in order: those named, or every one of the plug-in's (and accumulate
    where there is a size); an unknown name is a one-line error with the closest one."""
    known = {fix.name: fix for fix in trials.fixes}
    for fix in trials.fixes:  # (those tried where a fix saved nothing: asked by name too)
        then = _if_no_saving(fix)
        if then is not None:
            known.setdefault(then.name, then)
    if fixes is None:
        names = [f.name for f in trials.fixes]
        names += [f"{ACCUMULATE}={DEFAULT_STEPS}"] if size is not None else []
    elif isinstance(fixes, str):
        names = [fixes]
    else:
        names = list(fixes)
    asked = []
    for name in names:
        if not isinstance(name, str):
            raise UsageError(f"whatif: fixes= takes names such as 'amp', not {name!r}")
        if name in known:
            asked.append(_Asked(name, fix=known[name]))
        elif name.split("=")[0].strip() == ACCUMULATE:
            asked.append(_Asked(name, steps=_steps(name, size)))
        else:
            choices = [*known, f"{ACCUMULATE}=K"]
            close = difflib.get_close_matches(name, choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f": one of {', '.join(choices)}"
            raise UsageError(f"whatif: no fix named {name!r}{hint}")
    return asked


def _steps(name: str, size: int | None) -> int:
    text = name.partition("=")[2].strip() or str(DEFAULT_STEPS)
    if not text.isdigit() or int(text) < 2:
        raise UsageError(
            f"whatif: {name!r} takes a whole number of micro-batches, 2 or more: accumulate=4"
        )
    steps = int(text)
    if size is None:
        raise UsageError(
            f"whatif: {name} runs the step at size // {steps}: give the batch size, size=N"
        )
    if size // steps < 1:
        raise UsageError(f"whatif: {name} needs a size of {steps} or more, not {size}")
    return steps


def _caller(step: Callable[..., Any], size: int | None) -> Callable[[], Any]:
    return step if size is None else (lambda: step(size))


def _trial_of(
    session: Session,
    asked: _Asked,
    step: Callable[..., Any],
    size: int | None,
    trials: Trials,
    target: TrialTarget,
    state: Any,
) -> TrialRow:
    if asked.fix is None:  # accumulate=K: one micro-batch, its time K of them
        assert size is not None  # (_steps said so)
        micro = size // asked.steps
        row = _trial(session, asked.name, lambda: step(micro), None, trials, target, state)
        seconds = row.seconds * asked.steps if row.seconds is not None else None
        note = f"{asked.steps} micro-batches of {micro}"
        return TrialRow(**{**_fields(row), "seconds": seconds, "note": _joined(note, row.note)})
    why_not = asked.fix.why_not(target)
    if why_not:
        return TrialRow(asked.name, applied=False, note=why_not)
    return _trial(session, asked.name, _caller(step, size), asked.fix, trials, target, state)


def _trial(
    session: Session,
    name: str,
    call: Callable[[], Any],
    fix: Fix | None,
    trials: Trials,
    target: TrialTarget,
    state: Any,
    warm: bool = True,
) -> TrialRow:
    """One measured run of ``call`` under ``fix`` (None: as it is), as the region ``whatif
    NAME``, after an unmeasured one where ``warm``; the state put back after each."""
    if warm:  # one unmeasured run under it first: its time leaves out first uses
        # (a failure: the measured run meets it again, in its region)
        _unmeasured(call, fix, trials, target, state, f"whatif {name}")
    region = session.cells_pipeline.track(REGION + name)
    notes: list[str] = []
    memory = RunMemory()  # (what it held at its end: unknown for a run that raised)
    out_of_memory, refused, failure = False, "", None
    with _put_back(state):
        try:
            with region:
                _run(call, fix, trials, target, notes)
            # outside its time, before the state is put back (the region's start reset the
            # framework's peaks, its end does not)
            memory = trials.memory(target)
        except Exception as exc:  # (the region's record has its status: "oom", "error")
            # what it says is kept, not the error: its frames hold the run's tensors
            out_of_memory = is_out_of_memory(exc)
            refused = fix.refused(exc) if fix is not None and not out_of_memory else ""
            if not (out_of_memory or refused):
                failure = _raised(exc, f"whatif {name}" if fix is not None else "the baseline")
    if failure is not None:
        raise failure
    if refused:
        return TrialRow(name, applied=False, note=refused)
    note = notes[0] if notes else ""
    record = region.record
    peak, exact = _peak(record, target)
    return TrialRow(
        name,
        applied=True,
        peak=peak,
        seconds=record.duration if record is not None else None,
        note=_joined("ran out of memory", note) if out_of_memory else note,
        exact=exact,
        out_of_memory=out_of_memory,
        record=record.index if record is not None else None,
        activations=_freed_by_the_end(record, target, peak),
        weights=memory.weights,
        gradients=memory.gradients,
        optimizer_state=memory.optimizer_state,
        reserved_peak=memory.reserved_peak,
    )


def _unmeasured(
    call: Callable[[], Any],
    fix: Fix | None,
    trials: Trials,
    target: TrialTarget,
    state: Any,
    where: str,
) -> UsageError | None:
    """Run ``call`` under ``fix`` outside any region, the state put back after it; the
    one-line error of a run that raised (None: it did not), to raise where the caller wants
    it: it holds no frame of the run."""
    with _put_back(state):
        try:
            _run(call, fix, trials, target, [])
        except Exception as exc:
            return _raised(exc, where)
    return None


@contextlib.contextmanager
def _put_back(state: Any) -> Iterator[None]:
    """A block after which the step's state is put back (``state``; None: not copied) and
    what the run made in cycles is collected, so that a run out of memory leaves its tensors
    to none of the next."""
    try:
        yield
    finally:
        if state is not None:
            state.restore()
        gc.collect()


def _run(
    call: Callable[[], Any],
    fix: Fix | None,
    trials: Trials,
    target: TrialTarget,
    notes: list[str],
) -> None:
    """Run ``call`` under ``fix`` (its note kept in ``notes``), then wait for the device."""
    if fix is None:
        call()
    else:
        with fix.applied(target) as note:
            notes.append(note)
            call()
    trials.synchronize(target)


def _peak(record: CellRecord | None, target: TrialTarget) -> tuple[int | None, bool]:
    """The region's peak allocated on the step's GPU, every framework's together, and whether
    each of them was exact."""
    if record is None or target.cuda_index is None:
        return None, False
    for device in record.devices:
        if device.cuda_index == target.cuda_index:
            peaks = [f.peak_allocated for f in device.frameworks]
            if not peaks or any(p is None for p in peaks):
                return None, False
            return sum(p for p in peaks if p is not None), all(
                f.peak_exact for f in device.frameworks
            )
    return None, False


def _if_no_saving(fix: Fix | None) -> Fix | None:
    """The fix to try where ``fix`` saved next to nothing (an optional attribute of a Fix)."""
    return getattr(fix, "if_no_saving", None)


def _no_saving(row: TrialRow, baseline: TrialRow) -> bool:
    """Whether ``row``'s fix ran and lowered the baseline's peak by less than NO_SAVING."""
    if not row.applied or row.out_of_memory or row.peak is None or not baseline.peak:
        return False
    return row.peak > baseline.peak * (1 - NO_SAVING)


def _freed_by_the_end(
    record: CellRecord | None, target: TrialTarget, peak: int | None
) -> int | None:
    """The part of the run's ``peak`` it freed by its end: its activations and temporaries."""
    if record is None or peak is None:
        return None
    for device in record.devices:
        if device.cuda_index == target.cuda_index and device.allocated_after is not None:
            return max(0, peak - device.allocated_after)
    return None


def _raised(error: BaseException, where: str) -> UsageError:
    return UsageError(
        f"whatif: the step raised in {where}, and nothing was left changed: {exception_line(error)}"
    )


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _fields(row: TrialRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in TrialRow.__slots__}
