"""How the holder scan walks torch's objects: a tensor holds its storage (and a leaf its
``.grad``), a module its parameters, gradients and buffers, an optimizer its state; each
credited as what it is (the categories of ``holder_walk``)."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..holder_walk import (
    BUFFERS,
    GRADIENTS,
    OPTIMIZER_STATE,
    PARAMETERS,
    Credit,
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

    def open_container(walk: Reach, holder: str, obj: Any, follow: Callable[[Any], None]) -> None:
        if module is not None and isinstance(obj, module):
            _open_module(walk, holder, obj, follow)
        else:
            _open_optimizer(walk, holder, obj)

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


def _open_module(walk: Reach, holder: str, module: Any, follow: Callable[[Any], None]) -> None:
    # one pass over the submodules: their own parameters, gradients and buffers (a parameter
    # shared by two is one storage, counted once); other attributes followed
    grads = f"{holder} (grads)"
    own: list[tuple[str, Any, str]] = []
    gradients: list[tuple[str, Any, str]] = []  # (apart: a step makes them anew, set_to_none)
    try:
        for sub in module.modules():
            walk.enter(sub)
            attrs = _instance_dict(sub) or {}
            for t in (attrs.get("_parameters") or {}).values():
                if t is not None:
                    own.append((holder, t, PARAMETERS))
                    grad = t.grad
                    if grad is not None:
                        gradients.append((grads, grad, GRADIENTS))
            for t in (attrs.get("_buffers") or {}).values():
                if t is not None:
                    own.append((holder, t, BUFFERS))
            for key, value in attrs.items():
                if isinstance(value, _PLAIN) or key in _MODULE_OWN or "hooks" in key:
                    continue
                if type(value) in _BUILTIN_CONTAINERS and not value:
                    continue  # (every module's empty sets and dicts of its own)
                follow(value)
    except Exception:
        return
    _credit_own(walk, holder, module, own)
    _credit_own(walk, grads, module, gradients)


_MODULE_OWN = frozenset(("_parameters", "_buffers", "_modules"))
_BUILTIN_CONTAINERS = frozenset((dict, set, list, tuple, OrderedDict))


def _open_optimizer(walk: Reach, holder: str, opt: Any) -> None:
    # its state's tensors and its parameters; anything else in its state walked
    state_holder, params_holder = f"{holder} (state)", f"{holder} (params)"
    own: list[tuple[str, Any, str]] = []
    tensor = sys.modules["torch"].Tensor
    try:
        for state in list(opt.state.values()):
            if not isinstance(state, dict):
                walk.visit(state_holder, state, OPTIMIZER_STATE)
                continue
            for value in state.values():  # (Adam's: exp_avg, exp_avg_sq, step)
                if isinstance(value, tensor):
                    own.append((state_holder, value, OPTIMIZER_STATE))
                else:
                    walk.visit(state_holder, value, OPTIMIZER_STATE)
        for group in opt.param_groups:
            own.extend((params_holder, t, PARAMETERS) for t in group.get("params", ()))
    except Exception:
        return
    _credit_own(walk, holder, opt, own)


def _credit_own(walk: Reach, holder: str, owner: Any, own: list[tuple[str, Any, str]]) -> None:
    """Credit ``owner``'s own tensors, fingerprinted by their addresses and sizes so that a
    walk that remembers reads their storages again only once one changes."""
    try:
        fingerprint: Any = tuple(t.data_ptr() for _, t, _ in own), sum(t.nbytes for _, t, _ in own)
    except Exception:
        fingerprint = object()  # (a storage-less tensor: read every time)

    def read() -> list[Credit]:
        return [(name, _storage(walk, t), kind) for name, t, kind in own]

    walk.credit_own(holder, owner, fingerprint, read)


def _instance_dict(obj: Any) -> dict | None:
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return attrs if isinstance(attrs, dict) else None
