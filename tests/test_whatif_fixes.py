"""The fixes ``whatif`` tries (issue 44), torch's side, on torch's CPU build: whether each
applies and why not, what it changes while on, that leaving it undoes it (also after an
error), and that a trial's state (weights, buffers, gradients, training flags, an optimizer's
lazily made state and settings, a scheduler's, the random generators, grad mode) is put back
as it was."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from nbgpumon._sources.frameworks.torch import fixes  # noqa: E402
from nbgpumon._sources.frameworks.torch.trial_state import TrialState  # noqa: E402
from nbgpumon._sources.frameworks.trials import TrialTarget  # noqa: E402

pytestmark = pytest.mark.torch


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16),
        torch.nn.BatchNorm1d(16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 16),
        torch.nn.Linear(16, 1),
    )


def _step(model, optimizer, scheduler=None) -> None:
    model.train()
    loss = model(torch.randn(4, 8)).square().mean()
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    random.random()


def _on_cpu(model, *optimizers) -> TrialTarget:
    return TrialTarget(model, optimizers=optimizers, device_type="cpu")


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_trial_state_puts_back_all_that_a_training_step_changed():
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model.eval()  # (the step turns training on)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    rng, py_rng = torch.get_rng_state(), random.getstate()

    state = TrialState(model, [optimizer], [scheduler])
    assert state.nbytes() == sum(v.numel() * v.element_size() for v in weights.values())
    _step(model, optimizer, scheduler)
    torch.set_grad_enabled(False)  # (a trial may leave grad mode off)
    assert not _same(model.state_dict(), weights) and optimizer.state  # (it changed them)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)

    state.restore()
    assert _same(model.state_dict(), weights)  # weights and BatchNorm's running statistics
    assert all(p.grad is None for p in model.parameters())
    assert not model.training and not any(m.training for m in model.modules())
    assert not optimizer.state  # the state a first step made lazily is gone
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1)
    assert scheduler.state_dict()["last_epoch"] == 0
    assert torch.equal(torch.get_rng_state(), rng) and random.getstate() == py_rng
    assert torch.is_grad_enabled()
    params = list(model.parameters())
    assert all(p is q for p, q in zip(params, optimizer.param_groups[0]["params"], strict=True))

    # again, after a second step: the same copy, as often as asked; gradients that were there
    _step(model, optimizer)
    grads = [p.grad.clone() for p in model.parameters()]
    again = TrialState(model, [optimizer])
    _step(model, optimizer)
    again.restore()
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads, strict=True))


def test_amp_casts_under_autocast_while_on_and_not_after():
    model = _model()
    target = _on_cpu(model)
    amp = fixes.fix_named("amp")
    assert amp is not None and amp.why_not(target) == ""
    with amp.applied(target) as note:
        assert torch.is_autocast_enabled("cpu")
        out = model[0](torch.randn(2, 8))
        assert out.dtype == torch.bfloat16 and note == ""
    assert not torch.is_autocast_enabled("cpu")
    assert amp.why_not(_on_cpu(None)) == "no model to cast"
    ints = torch.nn.Embedding(4, 2)
    ints.weight = torch.nn.Parameter(torch.zeros(4, 2, dtype=torch.int64), requires_grad=False)
    assert "floating-point" in amp.why_not(_on_cpu(ints))


def test_amp_without_its_weight_cache_is_tried_where_amp_saved_next_to_nothing():
    from nbgpumon._session.analysis.whatif import TrialRow, _no_saving

    model = _model()
    target = _on_cpu(model)
    amp, uncached = fixes.fix_named("amp"), fixes.fix_named("amp_uncached")
    assert amp.if_no_saving is uncached and uncached.if_no_saving is None
    assert uncached not in fixes.FIXES  # (not run unless amp saved nothing, or asked for)
    with uncached.applied(target) as note:
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_cache_enabled()
        assert model[0](torch.randn(2, 8)).dtype == torch.bfloat16
        assert note.startswith("autocast(cache_enabled=False)")
    assert not torch.is_autocast_enabled("cpu") and torch.is_autocast_cache_enabled()
    base = TrialRow("baseline", True, peak=1000)
    assert _no_saving(TrialRow("amp", True, peak=990), base)  # 1% lower
    assert _no_saving(TrialRow("amp", True, peak=1200), base)  # higher
    assert not _no_saving(TrialRow("amp", True, peak=900), base)  # 10% lower
    assert not _no_saving(TrialRow("amp", False, note="no model to cast"), base)
    assert not _no_saving(TrialRow("amp", True, peak=990, out_of_memory=True), base)
    assert not _no_saving(TrialRow("amp", True, peak=None), base)


def test_no_grad_runs_a_step_without_backward_and_refuses_one_with_it():
    model = _model().eval()
    no_grad = fixes.fix_named("no_grad")
    assert no_grad is not None
    target = _on_cpu(model)
    with no_grad.applied(target):
        assert torch.is_inference_mode_enabled()
        model(torch.randn(4, 8))
    assert not torch.is_inference_mode_enabled()
    with pytest.raises(RuntimeError) as raised, no_grad.applied(target):
        model(torch.randn(4, 8)).sum().backward()
    assert no_grad.refused(raised.value) == "the step calls backward (no_grad is for evaluation)"
    assert no_grad.refused(ValueError("unrelated")) == ""


def test_checkpointing_wraps_the_largest_block_list_and_gives_the_same_gradients():
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.stem = torch.nn.Linear(8, 8)
    model.small = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(2)])
    model.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(3)])

    def forward(x):
        x = model.stem(x)
        for block in [*model.small, *model.layers]:
            x = torch.relu(block(x))
        return x

    batch = torch.randn(4, 8)
    forward(batch).sum().backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()

    check = fixes.fix_named("checkpointing")
    assert check is not None
    target = _on_cpu(model)
    assert check.why_not(target) == ""
    assert fixes.blocks_of(model)[0] == "layers"
    with check.applied(target) as note:
        assert note == "each of the 3 blocks of layers checkpointed"
        assert all("forward" in block.__dict__ for block in model.layers)
        assert not any("forward" in block.__dict__ for block in model.small)
        forward(batch).sum().backward()
    assert not any("forward" in block.__dict__ for block in model.layers)
    assert all(torch.allclose(p.grad, g) for p, g in zip(model.parameters(), plain, strict=True))
    # undone after an error too
    with pytest.raises(ZeroDivisionError), check.applied(target):
        raise ZeroDivisionError("a step that fails under the fix")
    assert not any("forward" in block.__dict__ for block in model.layers)
    assert "no nn.ModuleList" in check.why_not(_on_cpu(torch.nn.Linear(2, 2)))


class SwitchedModel(torch.nn.Module):
    """A model with Hugging Face's checkpointing switch, as transformers' models have it."""

    supports_gradient_checkpointing = True

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(2)])
        self.config = type("Config", (), {"use_cache": True})()
        self.is_gradient_checkpointing = False
        self.enabled_with = None

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        self.is_gradient_checkpointing, self.enabled_with = True, gradient_checkpointing_kwargs
        self.config.use_cache = False

    def gradient_checkpointing_disable(self):
        self.is_gradient_checkpointing = False


def test_checkpointing_uses_a_models_own_switch_non_reentrant_and_puts_use_cache_back():
    model = SwitchedModel()
    check = fixes.fix_named("checkpointing")
    target = _on_cpu(model)
    assert check.why_not(target) == ""
    with check.applied(target) as note:
        assert model.is_gradient_checkpointing and not model.config.use_cache
        assert model.enabled_with == {"use_reentrant": False}
        assert "own switch" in note
        assert not any("forward" in block.__dict__ for block in model.layers)
    assert not model.is_gradient_checkpointing and model.config.use_cache
    model.is_gradient_checkpointing = True
    assert check.why_not(target) == "already on"


def test_expandable_segments_need_a_cuda_device():
    fix = fixes.fix_named("expandable_segments")
    assert fix is not None
    assert fix.why_not(_on_cpu(_model())) == "needs a CUDA device"


def test_the_optimizers_options_are_set_on_each_group_for_the_run_and_put_back():
    model = _model()
    optimizer = torch.optim.AdamW(
        [{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 0.01}]
    )
    target = _on_cpu(model, optimizer)
    foreach, fused = fixes.fix_named("foreach=False"), fixes.fix_named("fused=True")
    assert foreach is not None and fused is not None
    assert foreach.why_not(target) == "" and fused.why_not(target) == ""
    with fused.applied(target):
        assert all(g["fused"] is True and g["foreach"] is False for g in optimizer.param_groups)
        _step(model, optimizer)  # (torch's fused AdamW runs on the CPU too)
    assert all(g["fused"] is None and g["foreach"] is None for g in optimizer.param_groups)
    with foreach.applied(target):
        assert all(g["foreach"] is False for g in optimizer.param_groups)
    assert all(g["foreach"] is None for g in optimizer.param_groups)
    assert "no optimizer" in foreach.why_not(_on_cpu(model))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    assert foreach.why_not(_on_cpu(model, sgd)) == "already foreach=False"
    lbfgs = torch.optim.LBFGS(model.parameters())
    assert fused.why_not(_on_cpu(model, lbfgs)) == "LBFGS has no fused option"


def test_every_fix_has_a_name_of_its_own():
    names = [fix.name for fix in fixes.FIXES]
    assert len(names) == len(set(names)) and all(names)
    assert fixes.fix_named("nonsense") is None
