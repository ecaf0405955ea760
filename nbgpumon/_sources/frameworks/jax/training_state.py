"""What flax's and optax's training objects hold, by kind, for the holder walk. An nnx ``Param`` is
parameters, a ``BatchStat`` buffers, an nnx optimizer's ``OptState`` and every optax state
(``ScaleByAdamState``: its count, mu and nu) optimizer state, and a flax ``TrainState`` its
``params`` and its ``opt_state``. Read from the modules the user imported (never imported here); a
plain dict of parameters (linen's ``init``) is just arrays held."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..holder_walk import BUFFERS, OPTIMIZER_STATE, PARAMETERS, Reach, class_of


@dataclass(frozen=True)
class TrainingTypes:
    """flax's and optax's classes as one walk sees them (each None where not imported)."""

    variable: type | None = None  # nnx.Variable: a value with a kind
    param: type | None = None
    batch_stat: type | None = None
    opt_state: type | None = None  # nnx's optimizer state variables
    train_state: type | None = None  # flax.training.train_state.TrainState
    optax_states: tuple[type, ...] = ()  # optax's NamedTuple states
    module: type | None = None  # nnx.Module: walked before optimizers that list its params

    @property
    def containers(self) -> tuple[type, ...]:
        found = (self.variable, self.train_state, *self.optax_states)
        return tuple(t for t in found if t is not None)


def training_types() -> TrainingTypes:
    """The classes of whatever of flax and optax is imported now."""
    nnx = sys.modules.get("flax.nnx")
    optimizer = sys.modules.get("flax.nnx.training.optimizer")
    return TrainingTypes(
        variable=class_of(nnx, "Variable"),
        param=class_of(nnx, "Param"),
        batch_stat=class_of(nnx, "BatchStat"),
        opt_state=class_of(optimizer, "OptState"),
        train_state=class_of(sys.modules.get("flax.training.train_state"), "TrainState"),
        optax_states=_optax_states(),
        module=class_of(nnx, "Module"),
    )


def open_training(types: TrainingTypes) -> Callable[[Reach, str, Any, Callable[[Any], None]], None]:
    """How the walk opens one of ``types``' containers."""

    def open_container(walk: Reach, holder: str, obj: Any, follow: Callable[[Any], None]) -> None:
        if types.variable is not None and isinstance(obj, types.variable):
            walk.visit(holder, _raw_value(obj), _variable_kind(types, obj))
        elif types.train_state is not None and isinstance(obj, types.train_state):
            walk.visit(f"{holder} (params)", getattr(obj, "params", None), PARAMETERS)
            walk.visit(f"{holder} (opt_state)", getattr(obj, "opt_state", None), OPTIMIZER_STATE)
        else:  # an optax state: a NamedTuple of arrays and pytrees of them
            for value in obj:
                walk.visit(holder, value, OPTIMIZER_STATE)

    return open_container


def _variable_kind(types: TrainingTypes, v: Any) -> str | None:
    if types.opt_state is not None and isinstance(v, types.opt_state):
        return OPTIMIZER_STATE
    if types.batch_stat is not None and isinstance(v, types.batch_stat):
        return BUFFERS
    if types.param is not None and isinstance(v, types.param):
        return PARAMETERS
    return None  # another kind of variable: what the walk is visiting says


def _raw_value(v: Any) -> Any:
    # ``get_raw_value()`` where flax has it: ``.value`` warns (deprecated) in the user's cell
    getter = getattr(type(v), "get_raw_value", None)
    try:
        return getter(v) if callable(getter) else object.__getattribute__(v, "raw_value")
    except Exception:
        return None


_OPTAX: tuple[int, tuple[type, ...]] = (-1, ())  # (len(sys.modules) when read, the states)


def _optax_states() -> tuple[type, ...]:
    """optax's state classes (its NamedTuples named ``...State``), read again only after an
    import (about 1 ms over optax's modules)."""
    global _OPTAX
    count = len(sys.modules)
    if _OPTAX[0] == count:
        return _OPTAX[1]
    found: dict[type, None] = {}
    if "optax" in sys.modules:
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "optax" or name.startswith("optax.")):
                continue
            for value in list(getattr(module, "__dict__", {}).values()):
                if (
                    isinstance(value, type)
                    and issubclass(value, tuple)
                    and hasattr(value, "_fields")
                    and value.__name__.endswith("State")
                ):
                    found[value] = None
    _OPTAX = (count, tuple(found))
    return _OPTAX[1]
