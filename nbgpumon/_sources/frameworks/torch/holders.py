"""How the holder scan walks torch's objects: a tensor holds its storage (and a leaf its ``.grad``),
a module its parameters, gradients and buffers, an optimizer its state. Each is credited as what it
is (the categories of ``holder_walk``)."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from operator import attrgetter, is_, methodcaller
from typing import Any

from ...._foundation.instance_attrs import instance_dict
from ..holder_walk import (
    BUFFERS,
    GRADIENTS,
    OPTIMIZER_STATE,
    PARAMETERS,
    HolderKinds,
    Reach,
    Storage,
    class_of,
)


def holder_kinds(device: str) -> HolderKinds | None:
    """torch's tensors, modules and optimizers for one walk; None without torch imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    tensor = class_of(torch, "Tensor")
    parameter = class_of(torch, "nn", "Parameter")
    module = class_of(torch, "nn", "Module")
    optimizer = class_of(torch, "optim", "Optimizer")
    containers = tuple(c for c in (module, optimizer) if c is not None)
    read = _ReadThisWalk()

    def open_container(walk: Reach, holder: str, obj: Any, follow: Callable[[Any], None]) -> None:
        if module is not None and isinstance(obj, module):
            _open_module(walk, holder, obj, follow, read)
        else:
            _open_optimizer(walk, holder, obj, read)

    def count_tensor(walk: Reach, holder: str, t: Any) -> None:
        # a parameter held apart from its module (``w = model.fc.weight``) is one all the same
        is_parameter = parameter is not None and isinstance(t, parameter)
        walk.credit(holder, _storage(walk, t), PARAMETERS if is_parameter else None)
        # only a leaf has a .grad: asking a non-leaf makes torch warn, in the cell
        leaf = t.requires_grad and getattr(t, "is_leaf", True)
        grad = getattr(t, "grad", None) if leaf else None
        if grad is not None:
            walk.credit(f"{holder} (grads)", _storage(walk, grad), GRADIENTS)

    return HolderKinds(
        arrays=(tensor,) if tensor is not None else (),
        count=count_tensor,
        containers=containers,
        open=open_container,
        first=(module,) if module is not None else (),
    )


def _storage(walk: Reach, t: Any) -> Storage | None:
    try:
        if t.is_cpu:
            # host memory is one place for every library (``torch.from_numpy`` shares numpy's)
            if not walk.wants("host", None):
                return None
            place = "host"
        else:
            device = t.device
            if not walk.wants(device.type, device.index):
                return None
            place = _PLACES.get(device) or _PLACES.setdefault(device, str(device))
        storage = t.untyped_storage()
        return (place, storage.data_ptr()), int(storage.nbytes())
    except Exception:
        return None  # sparse, meta, or otherwise storage-less tensors


_PLACES: dict[Any, str] = {}  # a device -> its name ("cuda:0"), made once, not per tensor
_PLAIN = (bool, int, float, str, type(None))  # a module's attributes that hold no tensor


class _ReadThisWalk:
    """The parameter lists this walk's modules gave, with their fingerprints: an optimizer
    over the same tensors (the usual ``AdamW(model.parameters())``) takes the fingerprint
    from there instead of reading 1,000 addresses again."""

    def __init__(self) -> None:
        self.params: list[tuple[list[Any], Hashable]] = []

    def fingerprint_of(self, tensors: list[Any]) -> Hashable | None:
        for params, fingerprint in self.params:
            if len(params) == len(tensors) and all(map(is_, params, tensors)):
                return fingerprint
        return None


def _open_module(
    walk: Reach, holder: str, module: Any, follow: Callable[[Any], None], read: _ReadThisWalk
) -> None:
    # one pass over the submodules, in the order of module.modules() (depth first, each
    # once): their own parameters, gradients and buffers (a parameter shared by two is one
    # storage, counted once); other attributes followed
    params: list[Any] = []
    grads: list[Any] = []  # (apart: a step makes them anew, zero_grad(set_to_none=True))
    buffers: list[Any] = []
    try:
        torch_own = _torch_own_attributes(type(module))
        entered: set[int] = set()
        stack = [module]
        while stack:
            sub = stack.pop()
            if id(sub) in entered:
                continue
            entered.add(id(sub))
            walk.enter(sub)
            attrs = instance_dict(sub) or {}
            own = attrs.get("_parameters")
            if own:
                params += [t for t in own.values() if t is not None]
            own = attrs.get("_buffers")
            if own:
                buffers += [t for t in own.values() if t is not None]
            children = attrs.get("_modules")
            if children:
                stack += [c for c in reversed(children.values()) if c is not None]
            for key in attrs.keys() - torch_own:  # (the layer's own: in_features, a cache)
                value = attrs[key]
                if isinstance(value, _PLAIN) or "hooks" in key:
                    continue
                if type(value) in _BUILTIN_CONTAINERS and not value:
                    continue
                follow(value)
        grads = [g for g in map(_GRAD, params) if g is not None]
    except Exception:
        return
    read.params.append((params, _credit_own(walk, holder, PARAMETERS, module, params)))
    _credit_own(walk, f"{holder} (grads)", GRADIENTS, module, grads)
    _credit_own(walk, holder, BUFFERS, module, buffers)


_TORCH_OWN: dict[type, frozenset[str]] = {}


def _torch_own_attributes(cls: type) -> frozenset[str]:
    """The attributes every module has from torch itself (its parameters, buffers,
    submodules, hooks and flags): not followed. Read once, from a bare ``nn.Module``."""
    base = next((c for c in cls.__mro__ if c.__module__ == "torch.nn.modules.module"), None)
    if base is None:
        return frozenset(("_parameters", "_buffers", "_modules"))
    if base not in _TORCH_OWN:
        _TORCH_OWN[base] = frozenset(vars(base()))
    return _TORCH_OWN[base]


_BUILTIN_CONTAINERS = frozenset((dict, set, list, tuple, OrderedDict))
_GRAD = attrgetter("grad")
_NBYTES = attrgetter("nbytes")
_DATA_PTR = methodcaller("data_ptr")


def _open_optimizer(walk: Reach, holder: str, opt: Any, read: _ReadThisWalk) -> None:
    # its state's tensors and its parameters; anything else in its state walked
    state_holder = f"{holder} (state)"
    tensor = sys.modules["torch"].Tensor
    try:
        states = list(opt.state.values())
        dicts = [s for s in states if isinstance(s, dict)]
        values = [v for s in dicts for v in s.values()]
        state = [v for v in values if isinstance(v, tensor)]
        # (torch's own optimizers keep a dict of tensors per parameter: nothing else to walk)
        if len(dicts) < len(states):
            for other in [s for s in states if not isinstance(s, dict)]:
                walk.visit(state_holder, other, OPTIMIZER_STATE)
        if len(state) < len(values):
            for other in [v for v in values if not isinstance(v, tensor)]:
                walk.visit(state_holder, other, OPTIMIZER_STATE)
        params = [t for group in opt.param_groups for t in group.get("params", ())]
    except Exception:
        return
    _credit_own(walk, state_holder, OPTIMIZER_STATE, opt, state)
    known = read.fingerprint_of(params)
    _credit_own(walk, f"{holder} (params)", PARAMETERS, opt, params, known)


def _credit_own(
    walk: Reach,
    holder: str,
    category: str,
    owner: Any,
    tensors: list[Any],
    fingerprint: Hashable | None = None,
) -> Hashable | None:
    """Credit ``owner``'s own ``tensors``, fingerprinted by their addresses and sizes (unless
    ``fingerprint`` is given: the same tensors', read moments ago) so that a walk that
    remembers reads their storages again only once one changes. Returns the fingerprint."""
    if not tensors:
        return None
    if fingerprint is None:
        fingerprint = _fingerprint(tensors, walk.known_fingerprint(holder, category, owner))

    def read() -> list[Storage | None]:
        return [_storage(walk, t) for t in tensors]

    walk.credit_own(holder, category, owner, fingerprint, read)
    return fingerprint


def _fingerprint(tensors: list[Any], known: Hashable | None) -> Hashable:
    """The addresses and the total bytes of ``tensors``; ``known`` itself where they are the
    ones it holds. torch's CUDA builds compare a list's addresses in one C call
    (``_tensors_data_ptrs_at_indices_equal``, what CUDA graphs check their inputs with): about
    a fifth of asking each tensor for its own from Python, for a model's thousand parameters
    and its optimizer's thousands of state tensors, at every cell that allocated."""
    try:
        same = _addresses_equal()
        if (
            same is not None
            and isinstance(known, tuple)
            and len(known) == 2
            and len(known[0]) == len(tensors)
            and same(tensors, list(known[0]), _indices(len(tensors)))
            and sum(map(_NBYTES, tensors)) == known[1]
        ):
            return known
        return tuple(map(_DATA_PTR, tensors)), sum(map(_NBYTES, tensors))
    except Exception:
        return object()  # (a storage-less tensor: read every time)


def _addresses_equal() -> Callable[[list, list, list], bool] | None:
    """torch's C comparison of tensors' addresses with a list of them, where it has one."""
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "_C", None), "_tensors_data_ptrs_at_indices_equal", None)


_INDICES: dict[int, list[int]] = {}  # 0..n-1, by n, for the lists a model's walks compare


def _indices(n: int) -> list[int]:
    found = _INDICES.get(n)
    if found is None:
        if len(_INDICES) >= 64:  # (a few lengths recur: a model's, its optimizer's)
            _INDICES.clear()
        found = _INDICES[n] = list(range(n))
    return found
