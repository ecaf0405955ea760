"""A host copy of what a trial of a step may change, put back after each trial.

That is the model's weights, buffers and gradients, each module's training flag, its
optimizers' state (made lazily by a first step) and settings, a GradScaler's or scheduler's,
the random generators and grad mode (autocast is the trial's own context's to undo). Never
imports torch: the user has (``sys.modules``).
"""

from __future__ import annotations

import copy
import random
import sys
from collections.abc import Iterable
from typing import Any


def torch_module() -> Any:
    """The torch the user imported; LookupError where there is none."""
    torch = sys.modules.get("torch")
    if torch is None:
        raise LookupError("torch is not imported")
    return torch


def _to_host(value: Any) -> Any:
    """``value`` with every tensor in it copied to the host (nested dicts, lists, tuples)."""
    torch = torch_module()
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _to_host(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_host(v) for v in value)
    return copy.deepcopy(value)


def _host_bytes(value: Any) -> int:
    torch = torch_module()
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(_host_bytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_host_bytes(v) for v in value)
    return 0


class TrialState:
    """A host copy of what a step's trials may change, made once (:meth:`nbytes` says its
    size); :meth:`restore` puts it all back, as often as asked, in place: the parameters and
    the optimizers keep their identities, so what holds them still does."""

    def __init__(self, model: Any, optimizers: Iterable[Any] = (), others: Iterable[Any] = ()):
        torch = torch_module()
        self.model = model
        self.optimizers = tuple(optimizers)
        self.others = tuple(o for o in others if hasattr(o, "state_dict"))  # scaler, scheduler
        self._weights = _to_host(model.state_dict()) if model is not None else {}
        self._grads = {
            name: (None if p.grad is None else _to_host(p.grad))
            for name, p in (model.named_parameters() if model is not None else ())
        }
        self._training = {m: m.training for m in model.modules()} if model is not None else {}
        self._optimizers = [_to_host(o.state_dict()) for o in self.optimizers]
        self._others = [_to_host(o.state_dict()) for o in self.others]
        self._cpu_rng = torch.get_rng_state()
        cuda = getattr(torch, "cuda", None)
        self._cuda_rng = (
            [s.clone() for s in cuda.get_rng_state_all()]
            if cuda is not None and cuda.is_initialized()
            else None
        )
        self._python_rng = random.getstate()
        numpy = sys.modules.get("numpy")
        self._numpy_rng = numpy.random.get_state() if numpy is not None else None
        self._grad_enabled = torch.is_grad_enabled()

    def nbytes(self) -> int:
        """Bytes of host memory the copy takes (the tensors in it)."""
        return sum(
            _host_bytes(part)
            for part in (self._weights, self._grads, self._optimizers, self._others)
        )

    def restore(self) -> None:
        """Put everything back as it was when the copy was made."""
        torch = torch_module()
        model = self.model
        if model is not None:
            with torch.no_grad():
                model.load_state_dict(self._weights, strict=True)  # (copied in place)
                for name, p in model.named_parameters():
                    saved = self._grads.get(name)
                    if saved is None:
                        p.grad = None
                    elif p.grad is not None and p.grad.shape == saved.shape:
                        p.grad.copy_(saved)
                    else:
                        p.grad = saved.to(p.device, copy=True)
            for module, training in self._training.items():
                module.training = training
        for optimizer, saved in zip(self.optimizers, self._optimizers, strict=True):
            optimizer.state.clear()  # (a first step's lazily made state goes too)
            optimizer.load_state_dict(copy.deepcopy(saved))
        for other, saved in zip(self.others, self._others, strict=True):
            other.load_state_dict(copy.deepcopy(saved))
        torch.set_rng_state(self._cpu_rng)
        if self._cuda_rng is not None:
            torch.cuda.set_rng_state_all(self._cuda_rng)
        random.setstate(self._python_rng)
        numpy = sys.modules.get("numpy")
        if numpy is not None and self._numpy_rng is not None:
            numpy.random.set_state(self._numpy_rng)
        torch.set_grad_enabled(self._grad_enabled)
