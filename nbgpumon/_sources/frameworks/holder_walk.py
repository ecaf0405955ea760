"""What a framework plug-in tells the holder scan: how to recognise its arrays and containers
and what they hold (device, bytes, storage identity).

The scan (``_forensics/holder_scan.py``) owns the walk: the roots, the budget, the depth, each
storage counted once. A plug-in's part is :class:`HolderKinds`, built per walk from the
framework's module in ``sys.modules`` (None when the user has not imported it), so the walk's
``isinstance`` checks cost nothing for a framework that is not there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

# One storage: (where it lives: "cuda:N", "host" or another device's name, its address).
StorageKey = tuple[str, int]
Storage = tuple[StorageKey, int]  # with its size in bytes

# What a storage is, as the walk credits it (the breakdown of memory by kind). A plug-in says
# the first four; anything else is an array held by a variable (one category per framework:
# ``arrays_held_by``), or by one of IPython's hidden references (``Out[N]``, a stored
# traceback) when the walk reached it from one.
PARAMETERS = "parameters"
GRADIENTS = "gradients"
OPTIMIZER_STATE = "optimizer state"
BUFFERS = "buffers"
ARRAYS = "arrays held by variables"  # (each framework's: ``arrays_held_by``)
HIDDEN = "outputs and tracebacks"
CATEGORIES = (PARAMETERS, GRADIENTS, OPTIMIZER_STATE, BUFFERS, ARRAYS, HIDDEN)
_RANK = {name: at for at, name in enumerate(CATEGORIES)}  # (in_category_order)


def arrays_held_by(label: str) -> str:
    """The category of one framework's arrays held by variables (its label as its users write
    it): "arrays held by variables (torch)", "... (JAX)", "... (CuPy)", "... (numpy)"."""
    return f"{ARRAYS} ({label})"


def in_category_order(names: Iterable[str]) -> list[str]:
    """Those of ``names`` that are categories, in :data:`CATEGORIES`' order, each framework's
    arrays where :data:`ARRAYS` stands, in the order given (the walk's: the plug-ins')."""
    ranked = [
        (_RANK[ARRAYS] if name.startswith(ARRAYS) else _RANK[name], name)
        for name in names
        if name in _RANK or name.startswith(ARRAYS)
    ]
    return [name for _, name in sorted(ranked, key=lambda r: r[0])]


class Reach(Protocol):
    """The walk's side, as a plug-in's readers use it."""

    def wants(self, kind: str, index: int | None) -> bool:
        """Whether memory of ``kind`` ("host", "cuda" or another device) on device ``index``
        is what this walk counts."""
        ...

    def credit(self, holder: str, storage: Storage | None, category: str | None = None) -> None:
        """Count ``storage`` for ``holder`` unless it was counted already (None: nothing), as
        ``category`` (one of :data:`CATEGORIES`; None: what the walk's visit says)."""
        ...

    def enter(self, obj: Any) -> None:
        """Mark ``obj`` as walked, so that reaching it again costs nothing."""
        ...

    def visit(self, holder: str, root: Any, category: str | None = None) -> None:
        """Walk everything reachable from ``root`` for ``holder`` (what it finds counted as
        ``category``, where given)."""
        ...

    def known_fingerprint(self, holder: str, category: str, owner: Any) -> Hashable | None:
        """The ``fingerprint`` that :meth:`credit_own` got for the same ``owner``, ``holder`` and
        ``category`` at the last walk that remembers; None where there is none. A reader that
        can check its tensors against it more cheaply than it can make a new one gives it back
        as it is when they match."""
        ...

    def credit_own(
        self,
        holder: str,
        category: str,
        owner: Any,
        fingerprint: Hashable,
        read: Callable[[], list[Storage | None]],
    ) -> None:
        """Credit what ``owner`` holds itself of ``category`` (``read()`` lists its storages) to
        ``holder``. A walk that remembers (a cell's end, from the last one) reuses its last reading
        where ``fingerprint`` (cheap: the tensors' addresses) is unchanged."""
        ...


# credits what one array holds: (the walk, its holder's name, the array)
CountArray = Callable[[Reach, str, Any], None]
# credits and follows what one container holds: (the walk, the holder, the container, and
# follow(value), which walks ``value`` one level deeper for the same holder)
OpenContainer = Callable[[Reach, str, Any, Callable[[Any], None]], None]


@dataclass(frozen=True, slots=True)
class HolderKinds:
    """One framework's types as one walk sees them."""

    arrays: tuple[type, ...] = ()  # what holds memory itself (tensors, arrays)
    count: CountArray | None = None
    containers: tuple[type, ...] = ()  # what holds arrays in its own way (models, optimizers)
    open: OpenContainer | None = None
    first: tuple[type, ...] = ()  # variables of these types are walked before the others


def class_of(module: Any, *path: str) -> type | None:
    """``module.a.b`` when it is a class, else None: a half-imported or stand-in module may
    lack it, and ``isinstance`` must never raise."""
    found = module
    for name in path:
        found = getattr(found, name, None)
    return found if isinstance(found, type) else None
