"""torch's side of a what-if run: the model, its optimizers, the fixes and a trial's state.

The model a step trains is the namespace's module of the most parameters, unless given; its
optimizers are those that hold its parameters, with what keeps state of them (a GradScaler, a
learning-rate scheduler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..trials import Fix, RunMemory, TrialTarget
from .fixes import FIXES
from .trial_state import TrialState, torch_module


class TorchTrials:
    """What a what-if run asks of torch."""

    fixes: tuple[Fix, ...] = FIXES

    def target(self, namespace: Mapping[str, Any], model: Any = None) -> TrialTarget:
        torch = torch_module()
        name = ""
        if model is None:
            name, model = _largest_module(torch, namespace)
        elif not isinstance(model, torch.nn.Module):
            raise ValueError(f"model= takes a torch.nn.Module, not {type(model).__name__}")
        if model is None:
            return TrialTarget(None)
        params = {id(p) for p in model.parameters()}
        optimizers = tuple(
            value
            for value in _values(namespace)
            if isinstance(value, torch.optim.Optimizer)
            and any(id(p) in params for g in value.param_groups for p in g["params"])
        )
        others = tuple(
            value for value in _values(namespace) if _keeps_state_of(torch, value, optimizers)
        )
        device = next((p.device for p in model.parameters()), None)
        device_type = device.type if device is not None else "cpu"
        index = device.index if device is not None and device.type == "cuda" else None
        compiled = hasattr(model, "_orig_mod")  # (torch.compile's OptimizedModule)
        return TrialTarget(model, name, optimizers, others, device_type, index, compiled)

    def state(self, target: TrialTarget) -> TrialState:
        return TrialState(target.model, target.optimizers, target.others)

    def synchronize(self, target: TrialTarget) -> None:
        cuda = torch_module().cuda
        if target.device_type == "cuda" and cuda.is_initialized():
            cuda.synchronize(target.cuda_index)

    def memory(self, target: TrialTarget) -> RunMemory:
        torch = torch_module()
        model = target.model
        if model is None:
            return RunMemory()
        device = next((p.device for p in model.parameters()), None)
        weights = _bytes_on([*model.parameters(), *model.buffers()], device)
        gradients = _bytes_on([p.grad for p in model.parameters()], device)
        state = [
            value
            for optimizer in target.optimizers
            for per_param in list(optimizer.state.values())
            for value in (per_param.values() if isinstance(per_param, dict) else ())
        ]
        reserved = None
        cuda = torch.cuda
        if target.cuda_index is not None and cuda.is_initialized():
            stats = cuda.memory_stats(target.cuda_index)
            reserved = stats.get("reserved_bytes.all.peak")
        return RunMemory(weights, gradients, _bytes_on(state, device), reserved)


def _bytes_on(values: list[Any], device: Any) -> int:
    """Bytes of the tensors among ``values`` that live on ``device``, each storage once."""
    torch = torch_module()
    seen: set[int] = set()
    total = 0
    for value in values:
        if not isinstance(value, torch.Tensor) or value.device != device:
            continue
        storage = value.untyped_storage()
        key = storage.data_ptr()
        if key not in seen:
            seen.add(key)
            total += storage.nbytes()
    return total


def _values(namespace: Mapping[str, Any]) -> list[Any]:
    """The namespace's user values, each once (IPython's own history names left out)."""
    seen: dict[int, Any] = {}
    for key, value in list(namespace.items()):
        if isinstance(key, str) and not key.startswith("_") and key not in ("In", "Out"):
            seen.setdefault(id(value), value)
    return list(seen.values())


def _largest_module(torch: Any, namespace: Mapping[str, Any]) -> tuple[str, Any]:
    """The namespace's module of the most parameters, and its name; ("", None) for none."""
    best: tuple[int, str, Any] | None = None
    for key, value in list(namespace.items()):
        if not isinstance(key, str) or key.startswith("_"):
            continue
        if isinstance(value, torch.nn.Module):
            count = sum(p.numel() for p in value.parameters())
            if count and (best is None or count > best[0]):
                best = (count, key, value)
    return ("", None) if best is None else (best[1], best[2])


def _keeps_state_of(torch: Any, value: Any, optimizers: tuple[Any, ...]) -> bool:
    """Whether ``value`` is a GradScaler, or a learning-rate scheduler of one of
    ``optimizers``."""
    scalers = tuple(
        kind
        for kind in (
            getattr(getattr(torch, "amp", None), "GradScaler", None),
            getattr(getattr(torch.cuda, "amp", None), "GradScaler", None),
        )
        if isinstance(kind, type)
    )
    if scalers and isinstance(value, scalers):
        return True
    scheduler = getattr(torch.optim.lr_scheduler, "LRScheduler", None)
    return (
        isinstance(scheduler, type)
        and isinstance(value, scheduler)
        and any(value.optimizer is o for o in optimizers)
    )
