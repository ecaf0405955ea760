"""Who holds the memory: a bounded walk from the user's variables and IPython's hidden
references (``Out[N]``, ``_``, stored tracebacks) to the tensors and arrays they keep alive.

Each storage is counted once, for the first holder that reaches it: user variables first
(modules before anything else, so a model's parameters are credited to the model and not to an
optimizer that also lists them), then the output cache, then tracebacks. The walk never keeps a
reference to what it visited once it returns (ids only), so it cannot itself keep a failing
frame alive, and it stops at a time budget with a partial answer rather than stall the cell.

The same walk finds CUDA tensors (``device="cuda"`` or ``"cuda:N"``) and host memory (CPU
tensors and numpy arrays, ``device="host"``), which is how it is tested without a GPU. JAX
arrays count once per addressable shard (CPU shards are host memory) and CuPy arrays once per
allocation, at its pool chunk's size; like torch, only when the library is already imported.
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
import time
import types
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._foundation.instance_attrs import instance_dict
from .._ledger.kinds_notes import ScanCut
from .._sources.frameworks import frameworks
from .._sources.frameworks.holder_walk import (
    HIDDEN,
    HolderKinds,
    Storage,
    StorageKey,
    arrays_held_by,
    in_category_order,
)

if TYPE_CHECKING:
    from .._sources.processes.on_gpu import ProcessOnGpu

MAX_DEPTH = 8  # containers nested deeper than this are not followed
NUMPY = "numpy"  # whose a plain numpy array is (host memory; not a plug-in)
CHECK_EVERY = 256  # objects between looks at the clock
# A variable whose storages are this few has them remembered one by one (``HolderScan.roots``):
# a cell that binds it again is read by what its old value held and its new one holds.
FEW_STORAGES = 16
_SCALARS = (str, bytes, bytearray, int, float, complex, bool, type(None), range)
_NOT_FOLLOWED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.FrameType,
    types.TracebackType,
    types.CodeType,
)
# IPython's own names in the user namespace: the hidden references, reported as such.
_OUTPUT_NAME = re.compile(r"^(_{1,3}|_\d+)$")
_IPYTHON_NAME = re.compile(r"^(_+|_\d+|_i+|_i\d+|_oh|_ih|_dh|In|Out|exit|quit|get_ipython)$")


def root_of(holder: str) -> str:
    """``opt (state)`` -> ``opt``: the name a holder hangs from."""
    return holder.split(" (", 1)[0]


@dataclass(frozen=True, slots=True)
class Holder:
    """One name that keeps memory alive, as a user would read it."""

    name: str  # "model", "opt (state)", "Out[7]", "traceback frame train() local 'y'"
    bytes: int
    storages: int  # distinct storages (tensors sharing one are counted once)
    hidden: bool  # IPython's or a traceback's reference, not a variable of the user's


@dataclass(frozen=True, slots=True)
class HolderScan:
    """The result of one walk (in words: ``_views/memory/holders.py``)."""

    device: str  # "cuda", "cuda:N", "host" or "any"
    holders: tuple[Holder, ...]  # biggest first
    total: int  # bytes over all holders
    objects: int  # objects looked at
    seconds: float
    partial: ScanCut | None  # None when complete, else where the walk stopped early
    processes: tuple[ProcessOnGpu, ...] = ()  # processes using the GPU(s), named
    # where the memory is ("cuda:N", "host") -> what it is (holder_walk.CATEGORIES, in that
    # order, each framework's arrays apart; only those found) -> bytes: the same storages as
    # ``holders``, by kind
    categories: dict[str, dict[str, int]] = field(default_factory=dict)
    # where -> whose ("torch", "jax", "cupy": a plug-in's name; "numpy") -> bytes: the same
    # storages by the framework whose array or container the walk counted them in
    frameworks: dict[str, dict[str, int]] = field(default_factory=dict)
    # every holder name that reached memory of ``device``, also where another holder was
    # credited with it first (an optimizer's parameters, after its model's)
    reached: frozenset[str] = frozenset()
    # the storages counted (``keys=True``): what a later walk of new names leaves out
    storages: frozenset[StorageKey] = frozenset()
    # (``keys=True``) each variable's storages as it was credited with them (and, in a walk of
    # new names, the known ones it reached), where it holds at most FEW_STORAGES and no
    # container read itself (else None)
    roots: dict[str, tuple[RootStorage, ...] | None] = field(default_factory=dict)
    # (a walk of new names) the storages it reached that were known already
    known_reached: frozenset[StorageKey] = frozenset()


# one storage a variable was credited with: (key, bytes, kind, where)
RootStorage = tuple[StorageKey, int, str, str]


@dataclass(frozen=True, slots=True)
class _Own:
    """One container's own reading (``Reach.credit_own``), kept for the next walk."""

    fingerprint: Hashable
    names: frozenset[str]  # the holders it credits
    keys: frozenset[StorageKey]
    # each storage once, in the order read: (holder, category, place, bytes, key)
    unique: tuple[tuple[str, str, str, int, StorageKey], ...]
    # its sums by (holder, category, place) -> [bytes, storages], with the storages counted
    # before it in the walk left out: by which were (the same ones, walk after walk)
    sums: dict[frozenset[StorageKey], list[tuple[tuple[str, str, str], int, int]]] = field(
        default_factory=dict
    )

    def sums_without(
        self, counted: frozenset[StorageKey]
    ) -> list[tuple[tuple[str, str, str], int, int]]:
        found = self.sums.get(counted)
        if found is None:
            totals: dict[tuple[str, str, str], list[int]] = {}
            for name, category, place, size, key in self.unique:
                if key not in counted:
                    entry = totals.setdefault((name, category, place), [0, 0])
                    entry[0] += size
                    entry[1] += 1
            found = [(k, size, count) for k, (size, count) in totals.items()]
            if len(self.sums) < 4:  # (a handful of overlaps, not one per walk)
                self.sums[counted] = found
        return found


class OwnMemo:
    """What the containers a walk read themselves held, by (owner, holder, kind). It is kept from
    one walk to the next (a cell's end to the next's), and only what the last walk read, so it is
    bounded by the namespace, not by the cells run."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str, str], _Own] = {}
        self.reused = 0  # (for tests and bench/)


class _Walk:
    """State of one scan: storages already counted, containers already entered, budget."""

    def __init__(
        self,
        device: str,
        budget: float,
        memo: OwnMemo | None = None,
        known: Collection[StorageKey] = (),
    ) -> None:
        self.memo = memo
        self.known = known  # storages counted already, by an earlier walk: not again
        self.read_own: dict[tuple[int, str, str], _Own] = {}  # this walk's, for the memo
        self.device = device
        self.deadline = time.perf_counter() + budget
        self.budget = budget
        self.seen_storages: set[StorageKey] = set()
        self.entered: set[int] = set()
        self.objects = 0
        self.stopped = False
        numpy = sys.modules.get("numpy")
        self.ndarray = getattr(numpy, "ndarray", None) if device in ("host", "any") else None
        kinds = framework_kinds(device)
        # each plug-in's arrays and containers, in registration order, with its name
        self.arrays = [(k.arrays, k.count, name) for name, k in kinds if k.arrays and k.count]
        self.containers = [
            (k.containers, k.open, name) for name, k in kinds if k.containers and k.open
        ]
        self.array_types = tuple(t for types_, _, _ in self.arrays for t in types_)
        self.container_types = tuple(t for types_, _, _ in self.containers for t in types_)
        self.found: dict[str, list[int]] = {}  # holder name -> [bytes, storages]
        self.reached: set[str] = set()  # holder names that reached a storage, new or not
        self.hidden: set[str] = set()  # holder names that are hidden references
        self.visiting_hidden = False
        self.category: str | None = None  # what the visit under way finds, where it says
        self.framework = NUMPY  # whose array or container is being counted
        # each framework's arrays held by variables, by its name (made once a walk)
        self.arrays_kind = {name: arrays_held_by(label) for name, label in _labels().items()}
        self.by_place: dict[str, dict[str, int]] = {}  # "cuda:N"/"host" -> category -> bytes
        self.by_framework: dict[str, dict[str, int]] = {}  # "cuda:N"/"host" -> plug-in -> bytes
        self.by_root: dict[str, list[RootStorage] | None] = {}  # (HolderScan.roots)
        self.known_reached: set[StorageKey] = set()

    # -- budget ---------------------------------------------------------------------------
    def tick(self) -> bool:
        """Count one object; False once the budget is spent."""
        self.objects += 1
        if self.objects % CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            self.stopped = True
        return not self.stopped

    # -- what counts (the plug-ins' readers call wants, credit, enter and visit) ------------
    def _array_storage(self, a: Any) -> Storage | None:
        base = a
        while isinstance(getattr(base, "base", None), self.ndarray):
            base = base.base  # views share their owner's buffer: count the owner once
        try:
            pointer = base.__array_interface__["data"][0]
        except Exception:
            return None
        return ("host", pointer), int(base.nbytes)

    def wants(self, kind: str, index: int | None) -> bool:
        """Whether memory of ``kind`` ("host", "cuda" or other) on ``index`` is walked for."""
        if self.device == "any":
            return True
        if self.device in ("host", "cuda"):
            return kind == self.device
        return kind == "cuda" and index == int(self.device.split(":")[1])

    def enter(self, obj: Any) -> None:
        self.entered.add(id(obj))

    def credit(self, holder: str, key_size: Storage | None, category: str | None = None) -> None:
        if key_size is None:
            return
        key, size = key_size
        self.reached.add(holder)
        if key in self.seen_storages or size <= 0 or key in self.known_reached:
            return
        kind = category or self.category
        if kind is None and self.visiting_hidden:
            kind = HIDDEN
        elif kind is None:  # (each framework's own: made once a walk, not once a storage)
            kind = self.arrays_kind.get(self.framework) or arrays_held_by(self.framework)
        if key in self.known:  # (counted by an earlier walk: only which root holds it now)
            self.known_reached.add(key)
        else:
            self.seen_storages.add(key)
            self._count(holder, kind, key[0], size, 1)
        root = root_of(holder)
        found = self.by_root.setdefault(root, [])
        if found is not None:
            found.append((key, size, kind, key[0]))
            if len(found) > FEW_STORAGES:
                self.by_root[root] = None

    def _count(self, holder: str, kind: str, place: str, size: int, storages: int) -> None:
        """Add ``storages`` new storages of ``size`` bytes in all to ``holder``, ``kind`` at
        ``place`` and the framework being counted."""
        if self.visiting_hidden:
            self.hidden.add(holder)
        entry = self.found.setdefault(holder, [0, 0])
        entry[0] += size
        entry[1] += storages
        kinds = self.by_place.setdefault(place, {})
        kinds[kind] = kinds.get(kind, 0) + size
        owners = self.by_framework.setdefault(place, {})
        owners[self.framework] = owners.get(self.framework, 0) + size

    def known_fingerprint(self, holder: str, category: str, owner: Any) -> Hashable | None:
        if self.memo is None:
            return None
        own = self.memo.entries.get((id(owner), holder, category))
        return None if own is None else own.fingerprint

    def credit_own(
        self,
        holder: str,
        category: str,
        owner: Any,
        fingerprint: Hashable,
        read: Callable[[], list[Storage | None]],
    ) -> None:
        self.by_root[root_of(holder)] = None  # (a container: read as one)
        if self.memo is None:  # (a walk that forgets: each storage credited as it comes)
            for storage in read():
                self.credit(holder, storage, category)
            return
        key = (id(owner), holder, category)
        own = self.memo.entries.get(key)
        if own is None or own.fingerprint != fingerprint:
            own = _own_reading(fingerprint, holder, category, read())
        else:
            self.memo.reused += 1
        self.read_own[key] = own
        counted = own.keys & self.seen_storages  # (a model's parameters, for its optimizer)
        self.seen_storages |= own.keys
        self.reached |= own.names
        for (name, kind, place), size, count in own.sums_without(frozenset(counted)):
            self._count(name, kind, place, size, count)

    # -- the walk -------------------------------------------------------------------------
    def visit(
        self, holder: str, root: Any, category: str | None = None, hidden: bool | None = None
    ) -> None:
        """Everything reachable from ``root`` (to MAX_DEPTH) is credited to ``holder`` (as
        ``category`` where given: a plug-in's visit of an optimizer's state)."""
        if hidden is not None:
            self.visiting_hidden = hidden
        outer = self.category, self.framework  # (a plug-in's visit inside a container's)
        self.category = category or self.category
        try:
            self._visit(holder, root)
        finally:
            self.category, self.framework = outer

    def _visit(self, holder: str, root: Any) -> None:
        stack: list[tuple[Any, int]] = [(root, 0)]
        while stack and self.tick():
            obj, depth = stack.pop()
            if isinstance(obj, _SCALARS):
                continue
            if isinstance(obj, self.array_types):  # one check for every plug-in's arrays
                count, self.framework = next(
                    (count, name) for types_, count, name in self.arrays if isinstance(obj, types_)
                )
                count(self, holder, obj)
                continue
            if self.ndarray is not None and isinstance(obj, self.ndarray):
                if obj.dtype.hasobject:
                    self._push_items(stack, obj.flat, depth)
                else:
                    self.framework = NUMPY
                    self.credit(holder, self._array_storage(obj))
                continue
            if isinstance(obj, _NOT_FOLLOWED) or depth >= MAX_DEPTH or id(obj) in self.entered:
                continue
            if _is_ours(obj):
                continue  # nbgpumon's own state (``mon = nbgpumon.monitor()``) is no holder
            self.entered.add(id(obj))
            if isinstance(obj, self.container_types):
                opened, self.framework = next(
                    (o, name) for types_, o, name in self.containers if isinstance(obj, types_)
                )
                opened(self, holder, obj, lambda value, d=depth: stack.append((value, d + 1)))
            elif isinstance(obj, dict):
                self._push_items(stack, obj.values(), depth)
            elif isinstance(obj, list | tuple | set | frozenset | deque):
                self._push_items(stack, obj, depth)
            else:
                attrs = instance_dict(obj)
                if attrs is not None:
                    self._push_items(stack, attrs.values(), depth)

    def _push_items(self, stack: list[tuple[Any, int]], items: Any, depth: int) -> None:
        # A long run of plain numbers or strings holds no memory worth naming: stop reading
        # such a container after 64 of them rather than walk a million floats.
        plain = 0
        for n, item in enumerate(items, 1):
            if n % 4096 == 0 and time.perf_counter() > self.deadline:
                self.stopped = True
                return
            if isinstance(item, _SCALARS):
                plain += 1
                if plain >= 64:
                    return
                continue
            stack.append((item, depth + 1))

    def result(self, seconds: float, keys: bool = False) -> HolderScan:
        holders = tuple(
            sorted(
                (
                    Holder(name, size, count, name in self.hidden)
                    for name, (size, count) in self.found.items()
                ),
                key=lambda h: -h.bytes,
            )
        )
        partial = ScanCut(self.budget, self.objects) if self.stopped else None
        categories = {
            place: {c: found[c] for c in in_category_order(found)}
            for place, found in sorted(self.by_place.items())
        }
        frameworks = {place: dict(owners) for place, owners in sorted(self.by_framework.items())}
        return HolderScan(
            device=self.device,
            holders=holders,
            total=sum(h.bytes for h in holders),
            objects=self.objects,
            seconds=seconds,
            partial=partial,
            categories=categories,
            frameworks=frameworks,
            reached=frozenset(self.reached),
            storages=frozenset(self.seen_storages) if keys else frozenset(),
            roots=_frozen(self.by_root) if keys else {},
            known_reached=frozenset(self.known_reached),
        )


def _frozen(
    by_root: dict[str, list[RootStorage] | None],
) -> dict[str, tuple[RootStorage, ...] | None]:
    return {root: None if found is None else tuple(found) for root, found in by_root.items()}


def _own_reading(
    fingerprint: Hashable, holder: str, category: str, storages: list[Storage | None]
) -> _Own:
    unique: dict[StorageKey, tuple[str, str, str, int, StorageKey]] = {}
    totals: dict[str, list[int]] = {}  # place -> [bytes, storages], nothing counted before
    for storage in storages:
        if storage is None or storage[1] <= 0 or storage[0] in unique:
            continue
        key, size = storage
        unique[key] = (holder, category, key[0], size, key)
        entry = totals.setdefault(key[0], [0, 0])
        entry[0] += size
        entry[1] += 1
    names = frozenset((holder,)) if any(s is not None for s in storages) else frozenset()
    own = _Own(fingerprint, names, frozenset(unique), tuple(unique.values()))
    own.sums[frozenset()] = [((holder, category, place), n, c) for place, (n, c) in totals.items()]
    return own


def _is_ours(obj: Any) -> bool:
    # its timeline's arrays are nbgpumon's memory, and its shell reference reaches every
    # variable: followed, it would be credited with the user's tensors
    return (getattr(type(obj), "__module__", "") or "").startswith("nbgpumon.")


def _labels() -> dict[str, str]:
    """Each plug-in's label by its name, and numpy's (whose plain arrays the walk counts)."""
    return {plugin.name: plugin.label for plugin in frameworks()} | {NUMPY: NUMPY}


def arrays_rank(category: str) -> int | None:
    """Where one framework's arrays held by variables (``arrays_held_by``) come among the
    frameworks': the plug-ins' order, numpy's last; None for another category."""
    for at, label in enumerate(_labels().values()):
        if category == arrays_held_by(label):
            return at
    return None


def framework_kinds(device: str) -> list[tuple[str, HolderKinds]]:
    """What each registered plug-in's arrays and containers are, for a walk of ``device``,
    with the plug-in's name."""
    found = []
    for plugin in frameworks():
        try:
            kinds = plugin.holder_kinds(device) if plugin.holder_kinds else None
        except Exception:
            kinds = None  # a plug-in that cannot say is walked past, never a failed scan
        if kinds is not None:
            found.append((plugin.name, kinds))
    return found


# -- roots --------------------------------------------------------------------------------
def user_variables(shell: Any, only: Collection[str] | None = None) -> list[tuple[str, Any]]:
    """The user's own variables (those named in ``only``, where given), those a plug-in names
    first (torch's modules) before the others."""
    ns = getattr(shell, "user_ns", {}) or {}
    hidden = getattr(shell, "user_ns_hidden", {}) or {}
    pairs = list(ns.items()) if only is None else [(n, ns[n]) for n in sorted(only) if n in ns]
    names = [
        (name, value)
        for name, value in pairs
        if not _IPYTHON_NAME.match(name)
        and name not in hidden
        and not isinstance(value, types.ModuleType | type)
    ]
    first = tuple(t for _, kinds in framework_kinds("any") for t in kinds.first)
    if not first:
        return names
    return sorted(names, key=lambda nv: not isinstance(nv[1], first))


def hidden_references(
    shell: Any, outputs: Collection[int] | None = None
) -> Iterator[tuple[str, Any]]:
    """IPython's references a user does not see. They are the output cache (only the entries
    numbered in ``outputs``, where given), ``_``/``__``/``___``, the last result, and the frames of
    stored tracebacks (each frame's locals by name)."""
    ns = getattr(shell, "user_ns", {}) or {}
    out = ns.get("Out")
    if isinstance(out, dict):
        numbers = out if outputs is None else [n for n in outputs if n in out]
        for n in sorted(numbers, reverse=True):
            yield f"Out[{n}]", out[n]
    hook = getattr(shell, "displayhook", None)
    for name in ("_", "__", "___"):
        yield name, getattr(hook, name, None)
    # IPython pushes _, __, ___ and _N into user_ns_hidden too: those copies outlive `del _3`.
    hidden = getattr(shell, "user_ns_hidden", None)
    if isinstance(hidden, dict):
        for name, value in list(hidden.items()):
            if _OUTPUT_NAME.match(name) and ns.get(name) is not value:
                yield f"{name} (IPython's hidden copy)", value
    last = getattr(shell, "last_execution_result", None)
    yield "the last result", getattr(last, "result", None)
    for tb in stored_tracebacks(shell):
        yield from _frame_locals(tb, ns)


def stored_tracebacks(shell: Any) -> list[Any]:
    """Every traceback IPython or ``sys`` keeps from the last error (with chained causes)."""
    found: list[Any] = []
    seen: set[int] = set()

    def add_exception(exc: Any) -> None:
        while isinstance(exc, BaseException) and id(exc) not in seen:
            seen.add(id(exc))
            add_tb(exc.__traceback__)
            exc = exc.__cause__ or exc.__context__

    def add_tb(tb: Any) -> None:
        if isinstance(tb, types.TracebackType) and id(tb) not in seen:
            seen.add(id(tb))
            found.append(tb)

    add_exception(getattr(sys, "last_exc", None))
    add_exception(getattr(sys, "last_value", None))
    add_tb(getattr(sys, "last_traceback", None))
    add_tb(getattr(getattr(shell, "InteractiveTB", None), "tb", None))
    last = getattr(shell, "last_execution_result", None)
    add_exception(getattr(last, "error_in_exec", None))
    return found


def _frame_locals(tb: Any, user_ns: dict) -> Iterator[tuple[str, Any]]:
    while tb is not None:
        frame = tb.tb_frame
        # A cell's top level runs with the user namespace as its locals: those are variables.
        if frame.f_globals is not user_ns or frame.f_code.co_name != "<module>":
            where = frame.f_code.co_name
            for var, value in list(frame.f_locals.items()):
                yield f"traceback frame {where}() local '{var}'", value
        tb = tb.tb_next


# -- the scan -----------------------------------------------------------------------------
DEVICES = re.compile(r"^(cuda|cuda:\d+|host|any)$")


def scan(
    shell: Any,
    device: str = "cuda",
    budget: float = 0.05,
    names: Collection[str] | None = None,
    outputs: Collection[int] | None = None,
    memo: OwnMemo | None = None,
    keys: bool = False,
) -> HolderScan:
    """What holds memory on ``device`` ("cuda", "cuda:N", "host" or "any") now, biggest first.

    Stops after ``budget`` seconds with what it found so far (``partial`` says so). ``names``
    and ``outputs``, where given, narrow the walk to those variables and ``Out`` entries (the
    other hidden references are always walked): a read of what is known to hold memory.
    ``memo``: what the containers read themselves at the last walk, reused where unchanged
    (and kept for the next). ``keys``: the storages counted too (``HolderScan.storages``).
    """
    if not DEVICES.match(device):
        raise ValueError(f"device must be cuda, cuda:N, host or any, not {device!r}")
    started = time.perf_counter()
    with _collector_off():
        walk = _walk(shell, device, budget, names, outputs, memo)
    return walk.result(time.perf_counter() - started, keys)


def scan_new(
    shell: Any,
    device: str,
    names: Collection[str],
    outputs: Collection[int],
    known: Collection[StorageKey],
    budget: float = 0.05,
) -> HolderScan:
    """What the variables ``names``, the ``Out`` entries ``outputs`` and the last result hold
    on ``device`` that is not among the storages ``known`` (an earlier walk's): what a cell that
    bound them may have added, at the cost of walking them alone. Its ``storages`` are the new
    ones."""
    roots = _named_roots(shell, names, outputs)
    started = time.perf_counter()
    walk = _Walk(device, budget, known=known)
    with _collector_off():
        for name, value in roots:
            if walk.stopped:
                break
            walk.visit(name, value, hidden=False)
    return walk.result(time.perf_counter() - started, keys=True)


def _named_roots(
    shell: Any, names: Collection[str], outputs: Collection[int]
) -> list[tuple[str, Any]]:
    """The variables ``names``, the ``Out`` entries ``outputs`` and the last result: what a cell
    bound, as a walk of them alone starts from."""
    out = (getattr(shell, "user_ns", {}) or {}).get("Out")
    roots = user_variables(shell, names)
    if isinstance(out, dict):
        roots += [(f"Out[{n}]", out[n]) for n in sorted(outputs) if n in out]
    last = getattr(shell, "last_execution_result", None)
    roots.append(("the last result", getattr(last, "result", None)))
    return roots


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """The collector off during a walk: the walk makes many small tuples and no cycles; left
    on, the collector would run full passes over the kernel's heap (a model's objects) in the
    middle of it, doubling its cost."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _walk(
    shell: Any,
    device: str,
    budget: float,
    names: Collection[str] | None,
    outputs: Collection[int] | None,
    memo: OwnMemo | None,
) -> _Walk:
    walk = _Walk(device, budget, memo)
    for name, value in user_variables(shell, names):
        if walk.stopped:
            break
        walk.visit(name, value, hidden=False)
    for name, value in hidden_references(shell, outputs):
        if walk.stopped:
            break
        walk.visit(name, value, hidden=True)
    if memo is not None and not walk.stopped:
        memo.entries = walk.read_own  # (a walk cut short keeps the older readings)
    return walk


def reaches(
    shell: Any,
    device: str,
    names: Collection[str],
    outputs: Collection[int] = (),
    budget: float = 0.05,
) -> bool:
    """Whether the variables ``names``, the ``Out`` entries ``outputs`` or the last result
    reach memory of ``device`` (a walk cut short by ``budget`` cannot tell: True)."""
    roots = _named_roots(shell, names, outputs)
    walk = _Walk(device, budget)
    with _collector_off():
        for name, value in roots:
            walk.visit(name, value, hidden=False)
            if walk.reached or walk.stopped:
                return True
    return False


def holds_memory(value: Any) -> bool:
    """True when ``value`` reaches a tensor or array (any device) within the walk's bounds."""
    walk = _Walk("any", 0.01)
    walk.visit("value", value)
    return bool(walk.found)
