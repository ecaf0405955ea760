"""How the holder scan walks torch's objects: a tensor holds its storage (and a leaf its
``.grad``), a module its parameters, gradients and buffers, an optimizer its state; each
credited as what it is (the categories of ``holder_walk``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

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
        device = t.device
        host = device.type == "cpu"
        if not walk.wants("host" if host else device.type, device.index):
            return None
        storage = t.untyped_storage()
        # host memory is one place for every library (``torch.from_numpy`` shares numpy's)
        place = "host" if host else str(device)
        return (place, storage.data_ptr()), int(storage.nbytes())
    except Exception:
        return None  # sparse, meta, or otherwise storage-less tensors


def _open_module(walk: Reach, holder: str, module: Any, follow: Callable[[Any], None]) -> None:
    try:
        for t in module.parameters():
            walk.credit(holder, _storage(walk, t), PARAMETERS)
            if t.grad is not None:
                walk.credit(f"{holder} (grads)", _storage(walk, t.grad), GRADIENTS)
        for t in module.buffers():
            walk.credit(holder, _storage(walk, t), BUFFERS)
        for sub in module.modules():
            walk.enter(sub)
            attrs = _instance_dict(sub) or {}
            for key, value in attrs.items():
                if key not in ("_parameters", "_buffers", "_modules") and not key.endswith("hooks"):
                    follow(value)
    except Exception:
        return


def _open_optimizer(walk: Reach, holder: str, opt: Any) -> None:
    try:
        for state in list(opt.state.values()):
            walk.visit(f"{holder} (state)", state, OPTIMIZER_STATE)
        for group in opt.param_groups:
            for t in group.get("params", ()):
                walk.credit(f"{holder} (params)", _storage(walk, t), PARAMETERS)
    except Exception:
        return


def _instance_dict(obj: Any) -> dict | None:
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return attrs if isinstance(attrs, dict) else None
