"""The fixes for GPU memory trouble that a what-if run tries on a step, torch's side.

Each says whether it applies to a model and its optimizers (and why not), applies itself for
one run and undoes itself after, also when the run raises. What a fix saves is for whoever runs
the trials to measure; ``accumulate=K`` needs no torch and is not here.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

from ..trials import Fix, TrialTarget
from .trial_state import torch_module


class _Fix:
    name = ""
    relieves = "activations"  # (Fix.relieves: what each lowers, but expandable segments)

    def refused(self, error: BaseException) -> str:
        return ""


class Amp(_Fix):
    """The step under ``torch.autocast``: bf16 where the device supports it, else fp16."""

    name = "amp"

    def why_not(self, target: TrialTarget) -> str:
        if target.model is None:
            return "no model to cast"
        if not any(p.is_floating_point() for p in target.model.parameters()):
            return "the model has no floating-point parameters"
        return ""

    cache = True  # autocast's cast cache: each weight cast once per autocast block, kept to its end

    @property
    def if_no_saving(self) -> Fix | None:
        """What to try where this saved next to nothing: autocast without its weight-cast
        cache, whose half-precision copies of the weights can take what the casts saved."""
        return AMP_UNCACHED if self.cache else None

    @contextlib.contextmanager
    def applied(self, target: TrialTarget) -> Iterator[str]:
        torch = torch_module()
        half = _half_dtype(torch, target.device_type)
        notes = [] if half is torch.bfloat16 else ["fp16: train with a GradScaler and fp32 weights"]
        if not self.cache:
            notes.insert(0, "autocast(cache_enabled=False): each use of a weight casts it again")
        with torch.autocast(target.device_type, dtype=half, cache_enabled=self.cache):
            yield "; ".join(notes)


class AmpUncached(Amp):
    """``amp`` without autocast's weight-cast cache (``cache_enabled=False``): tried where
    ``amp`` saved next to nothing, or asked for by name."""

    name = "amp_uncached"
    cache = False


AMP_UNCACHED = AmpUncached()


def _half_dtype(torch: Any, device_type: str) -> Any:
    if device_type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16


class NoGrad(_Fix):
    """The step under ``torch.inference_mode()``: for a step that calls no backward."""

    name = "no_grad"

    def why_not(self, target: TrialTarget) -> str:
        return ""  # (a step that calls backward says so as it runs: refused)

    @contextlib.contextmanager
    def applied(self, target: TrialTarget) -> Iterator[str]:
        with torch_module().inference_mode():
            yield ""

    def refused(self, error: BaseException) -> str:
        text = str(error)
        backward = ("does not require grad", "does not have a grad_fn", "inference tensor")
        if isinstance(error, RuntimeError) and any(part in text for part in backward):
            return "the step calls backward (no_grad is for evaluation)"
        return ""


class Checkpointing(_Fix):
    """Activation checkpointing: the model's own switch where it has one (Hugging Face's
    ``gradient_checkpointing_enable``), else each block of its largest ``nn.ModuleList`` or
    ``nn.Sequential`` run under ``torch.utils.checkpoint`` (non-reentrant)."""

    name = "checkpointing"

    def why_not(self, target: TrialTarget) -> str:
        model = target.model
        if model is None:
            return "no model to checkpoint"
        if _has_switch(model):
            return "already on" if getattr(model, "is_gradient_checkpointing", False) else ""
        if blocks_of(model) is None:
            return "the model has no nn.ModuleList or nn.Sequential of blocks to checkpoint"
        return ""

    @contextlib.contextmanager
    def applied(self, target: TrialTarget) -> Iterator[str]:
        model = target.model
        if _has_switch(model):
            config = getattr(model, "config", None)
            use_cache = getattr(config, "use_cache", None)
            non_reentrant = {"use_reentrant": False}  # (Hugging Face's default is reentrant)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=non_reentrant)
            try:
                yield "the model's own switch (it takes effect in train(); use_cache off)"
            finally:
                model.gradient_checkpointing_disable()
                if config is not None and use_cache is not None:
                    config.use_cache = use_cache
            return
        found = blocks_of(model)
        assert found is not None  # (why_not said so)
        path, blocks = found
        with _checkpointed(blocks):
            yield f"each of the {len(blocks)} blocks of {path or 'the model'} checkpointed"


def _has_switch(model: Any) -> bool:
    return callable(getattr(model, "gradient_checkpointing_enable", None)) and bool(
        getattr(model, "supports_gradient_checkpointing", False)
    )


def blocks_of(model: Any) -> tuple[str, list[Any]] | None:
    """The model's largest ``nn.ModuleList`` or ``nn.Sequential`` of two blocks or more, by
    the parameters it holds, with its path in the model ("" for the model itself)."""
    nn = torch_module().nn
    best: tuple[int, str, list[Any]] | None = None
    for path, module in model.named_modules():
        if not isinstance(module, nn.ModuleList | nn.Sequential) or len(module) < 2:
            continue
        size = sum(p.numel() for p in module.parameters())
        if best is None or size > best[0]:
            best = (size, path, list(module))
    return None if best is None else (best[1], best[2])


@contextlib.contextmanager
def _checkpointed(blocks: list[Any]) -> Iterator[None]:
    checkpoint = torch_module().utils.checkpoint.checkpoint
    kept = [(block, block.__dict__.get("forward")) for block in blocks]
    try:
        for block, _ in kept:
            block.forward = functools.partial(_run_checkpointed, checkpoint, block.forward)
        yield
    finally:
        for block, forward in kept:
            if forward is None:
                block.__dict__.pop("forward", None)
            else:
                block.forward = forward


def _run_checkpointed(checkpoint: Any, forward: Any, *args: Any, **kwargs: Any) -> Any:
    return checkpoint(forward, *args, use_reentrant=False, **kwargs)


class ExpandableSegments(_Fix):
    """torch's allocator setting against fragmentation, switched on for the run where this
    torch allows it at run time; the cache is emptied first, as old segments stay as they
    were."""

    name = "expandable_segments"
    relieves = "cache"

    def why_not(self, target: TrialTarget) -> str:
        if target.device_type != "cuda":
            return "needs a CUDA device"
        if _allocator_setter(torch_module()) is None:
            return "this torch cannot change it at run time"
        if _expandable_in_environment():
            return "already on (PYTORCH_CUDA_ALLOC_CONF)"
        return ""

    @contextlib.contextmanager
    def applied(self, target: TrialTarget) -> Iterator[str]:
        torch = torch_module()
        setter = _allocator_setter(torch)
        assert setter is not None  # (why_not said so)
        torch.cuda.empty_cache()
        setter("expandable_segments:True")
        try:
            yield "the cache emptied first"
        finally:
            torch.cuda.empty_cache()
            setter("expandable_segments:False")


def _allocator_setter(torch: Any) -> Any:
    """torch's call that changes the allocator's settings at run time (it moved in 2.9)."""
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    if setter is None:
        setter = getattr(getattr(torch.cuda, "memory", None), "_set_allocator_settings", None)
    return setter


def _expandable_in_environment() -> bool:
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        settings = os.environ.get(name, "").replace(" ", "").lower()
        if "expandable_segments:true" in settings:
            return True
    return False


class OptimizerOption(_Fix):
    """One of the optimizer's own memory options, set on each of its parameter groups for the
    run: ``foreach=False`` (no multi-tensor temporaries) or ``fused=True``."""

    def __init__(self, option: str, value: bool) -> None:
        self.option, self.value = option, value
        self.name = f"{option}={value}"

    def why_not(self, target: TrialTarget) -> str:
        if not target.optimizers:
            return "no optimizer holds the model's parameters"
        for optimizer in target.optimizers:
            if self.option not in getattr(optimizer, "defaults", {}):
                return f"{type(optimizer).__name__} has no {self.option} option"
        if all(
            group.get(self.option) is self.value
            for optimizer in target.optimizers
            for group in optimizer.param_groups
        ):
            return f"already {self.option}={self.value}"
        if self.option == "fused" and self.value:
            return _why_not_fused(target)
        return ""

    @contextlib.contextmanager
    def applied(self, target: TrialTarget) -> Iterator[str]:
        groups = [group for optimizer in target.optimizers for group in optimizer.param_groups]
        kept = [(group, group.get("foreach"), group.get("fused")) for group in groups]
        try:
            for group in groups:
                group[self.option] = self.value
                if self.option == "fused" and self.value:
                    group["foreach"] = False  # (torch takes one of them at most)
            yield ""
        finally:
            for group, foreach, fused in kept:
                group["foreach"], group["fused"] = foreach, fused


def _why_not_fused(target: TrialTarget) -> str:
    torch = torch_module()
    try:
        from_utils = torch.utils._foreach_utils._get_fused_kernels_supported_devices
        devices = set(from_utils())
    except AttributeError:
        devices = {"cuda"}
    for optimizer in target.optimizers:
        for group in optimizer.param_groups:
            if group.get("differentiable"):
                return "the optimizer is differentiable"
            for p in group["params"]:
                if p.device.type not in devices:
                    return f"no fused kernel for parameters on {p.device.type}"
                if not p.is_floating_point():
                    return "a parameter is not floating-point"
    return ""


FIXES: tuple[Fix, ...] = (
    Amp(),
    Checkpointing(),
    NoGrad(),
    ExpandableSegments(),
    OptimizerOption("foreach", False),
    OptimizerOption("fused", True),
)


def fix_named(name: str) -> Fix | None:
    """The fix called ``name`` (``FIXES``, or one tried where one of them saved nothing), or
    None."""
    return next((fix for fix in (*FIXES, AMP_UNCACHED) if fix.name == name), None)
