"""The widget's synced traits, typed: the keys each row holds and what each key's value is.

A value of the wrong shape is refused here, in Python, with one line that says where and what
(``GPUMonWidget.cells[3]: 'start' must be a number, not 'soon'``), instead of reaching the
browser and failing there. The shapes are those of docs/widget-protocol.md; a row may carry
keys beyond its shape's (a registry field added later), which pass as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from traitlets import Dict, HasTraits, List, TraitError


@dataclass(frozen=True)
class Kind:
    """What a key's value must be: ``what`` says it in the error, ``test`` checks it."""

    what: str
    test: Callable[[Any], bool]

    def or_none(self) -> Kind:
        return Kind(f"{self.what} or None", lambda v: v is None or self.test(v))


def _number(v: Any) -> bool:  # numpy's scalars register as Real and Integral too
    kind = type(v)  # (an int or a float first: an ABC's check costs a row a microsecond each)
    return kind is float or kind is int or (isinstance(v, Real) and kind is not bool)


def _integer(v: Any) -> bool:
    kind = type(v)
    return kind is int or (isinstance(v, Integral) and kind is not bool)


STR = Kind("a string", lambda v: isinstance(v, str))
INT = Kind("an integer", _integer)
NUMBER = Kind("a number", _number)
BOOL = Kind("True or False", lambda v: isinstance(v, bool))
STRINGS = Kind(
    "a list of strings", lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)
)
READINGS = Kind(  # `running`'s baseline: a reading by timeline column
    "a dict of numbers by column",
    lambda v: (
        isinstance(v, dict)
        and all(isinstance(k, str) and (x is None or _number(x)) for k, x in v.items())
    ),
)


@dataclass(frozen=True)
class Shape:
    """A row's keys: those it must have (``required``) and those it may (``optional``)."""

    required: Mapping[str, Kind]
    optional: Mapping[str, Kind] = field(default_factory=dict)

    def check(self, row: Any, where: str) -> None:
        """Raise a TraitError naming ``where`` and the key unless ``row`` has this shape."""
        if not isinstance(row, dict):
            raise TraitError(f"{where} must be a dict, not {_shown(row)}")
        for key, kind in self.required.items():
            if key not in row:
                raise TraitError(f"{where} has no {key!r} ({kind.what})")
            if not kind.test(row[key]):
                raise TraitError(f"{where}: {key!r} must be {kind.what}, not {_shown(row[key])}")
        for key, kind in self.optional.items():
            if key in row and not kind.test(row[key]):
                raise TraitError(f"{where}: {key!r} must be {kind.what}, not {_shown(row[key])}")

    def rows(self, what: str) -> Kind:
        """A key whose value is a list of rows of this shape (a cell's ``frameworks``)."""

        def test(value: Any) -> bool:
            if not isinstance(value, list):
                return False
            try:
                for i, row in enumerate(value):
                    self.check(row, f"[{i}]")
            except TraitError:
                return False
            return True

        return Kind(what, test)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{type(value).__name__} {text[:50]}…"


class Rows(List):
    """A synced list whose every item is a dict of ``shape``."""

    def __init__(self, shape: Shape, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shape = shape

    def validate(self, obj: HasTraits, value: Any) -> Any:
        value = super().validate(obj, value)
        where = f"{type(obj).__name__}.{self.name}"
        for i, row in enumerate(value):
            self.shape.check(row, f"{where}[{i}]")
        return value

    def check_rows(self, obj: HasTraits, rows: list[Any]) -> None:
        """Check rows about to join the trait's list in place (traitlets sees no assignment)."""
        self.validate(obj, rows)


class Row(Dict):
    """A synced dict of ``shape``, or ``{}`` (nothing now)."""

    def __init__(self, shape: Shape, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shape = shape

    def validate(self, obj: HasTraits, value: Any) -> Any:
        value = super().validate(obj, value)
        if value:
            self.shape.check(value, f"{type(obj).__name__}.{self.name}")
        return value


_COLUMN_FIELDS = ("source", "metric", "label", "chart", "kind", "scope", "export", "color", "group")
COLUMN = Shape(  # a timeline column with its registry metadata (Metric.describe)
    required={"name": STR, "device": INT.or_none(), "unit": STR, "panel": STR},
    optional={**{k: STR for k in _COLUMN_FIELDS}, "order": INT, "node": STR, "gpu": STR},
)
DEVICE = Shape(
    required={
        "index": INT, "name": STR, "memory_total": INT.or_none(), "cuda_index": INT.or_none(),
        "cuda_label": STR,
    },
    optional={"unavailable": STRINGS, "mig_profile": STR, "gpu_instance": INT},
)  # fmt: skip
FRAMEWORK_FIGURE = Shape(
    required={"label": STR, "peak": NUMBER.or_none(), "peak_exact": BOOL, "kept": NUMBER.or_none()}
)
KIND = Shape(required={"gpu": INT, "kind": STR, "bytes": NUMBER})
CELL = Shape(
    required={
        "index": INT, "name": STR, "count": INT.or_none(), "kind": STR, "label": STR,
        "start": NUMBER, "end": NUMBER, "duration": NUMBER, "status": STR,
        "alloc": NUMBER.or_none(), "peak": NUMBER.or_none(), "peak_exact": BOOL,
        "kept": NUMBER.or_none(), "util_mean": NUMBER.or_none(), "util_max": NUMBER.or_none(),
        "host_delta": NUMBER.or_none(), "summary": STR, "held_by": STR,
        "frameworks": FRAMEWORK_FIGURE.rows("a list of {label, peak, peak_exact, kept}"),
        "frameworks_named": BOOL,
    },
    optional={
        "children": STR,  # the processes it started, in words ("" for none)
        "kinds": KIND.rows("a list of {gpu, kind, bytes}"),  # its peak by kind, per GPU
        "kinds_text": STR,
    },
)  # fmt: skip
RUNNING = Shape(
    required={
        "name": STR, "count": INT.or_none(), "kind": STR, "label": STR, "start": NUMBER,
        "baseline": READINGS,
    }
)  # fmt: skip
MARK = Shape(required={"time": NUMBER, "label": STR})
_REMOTE_GPU = Shape(
    required={k: STR for k in ("gpu", "model", "uuid", "pod", "namespace", "origin", "mig_profile")}
)
NODE = Shape(
    required={
        "host": STR,
        "last_seen": NUMBER.or_none(),
        "gpus": _REMOTE_GPU.rows("a list of {gpu, model, uuid, pod, ...}"),
    }
)
