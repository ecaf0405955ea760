"""``nbgpumon.whatif`` (issue 44) on torch's CPU build, beside one GPU faked at the library
boundary (NVML): each fix's run is a region in the ledger, the fixes that do not apply say why,
the step's state is as it was afterwards (also after a step that raises), and bad input is one
line. The peaks themselves need a GPU: tests/test_whatif_gpu.py."""

from __future__ import annotations

import weakref

import pytest

torch = pytest.importorskip("torch")

from nbgpumon import Monitor, UsageError, WhatifResult  # noqa: E402

from notebook_runner import fake_nvml_env, fake_pynvml, run_cells  # noqa: E402

pytestmark = pytest.mark.torch
GIB = 2**30


@pytest.fixture
def mon():
    nvml = fake_pynvml(devices=[{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}])
    monitor = Monitor(nvml_module=nvml)
    try:
        yield monitor
    finally:
        monitor.close()


def _training():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.Linear(32, 32),
        torch.nn.Linear(32, 1),
    )  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    calls: list[int] = []

    def train_step(n: int = 8) -> None:
        calls.append(n)
        model.train()
        optimizer.zero_grad()
        model(torch.randn(n, 16)).square().mean().backward()
        optimizer.step()

    return model, optimizer, train_step, calls


def test_each_fix_runs_as_a_region_and_the_model_is_as_it_was_after(mon):
    model, optimizer, train_step, calls = _training()
    model.eval()
    weights = {k: v.clone() for k, v in model.state_dict().items()}

    result = mon.whatif(train_step, size=8)

    assert isinstance(result, WhatifResult)
    assert result.baseline.fix == "baseline" and result.baseline.applied
    rows = {row.fix: row for row in result.rows}
    assert list(rows) == [
        "amp", "checkpointing", "no_grad", "expandable_segments", "foreach=False",
        "fused=True", "accumulate=2",
    ]  # fmt: skip
    assert rows["no_grad"].note == "the step calls backward (no_grad is for evaluation)"
    assert rows["expandable_segments"].note == "needs a CUDA device"
    assert not rows["no_grad"].applied and not rows["expandable_segments"].applied
    ran = [row for row in [result.baseline, *result.rows] if row.applied]
    assert all(row.seconds is not None and row.seconds > 0 for row in ran)
    assert all(row.peak is None for row in ran)  # (the model is on no GPU: nothing to read)
    assert rows["accumulate=2"].note == "2 micro-batches of 4"
    assert 4 in calls and calls.count(8) >= 2 * 5  # (each fix: an unmeasured run, then one)

    # each run is a region of the ledger, named for its fix, with its index in its row
    regions = {c.index: c for c in mon.cells() if c.kind == "region"}
    for row in ran:
        assert regions[row.record].label == f"whatif {row.fix}"
    assert "whatif no_grad" in {c.label for c in regions.values()}  # (it ran, and was refused)

    # nothing left changed: weights, BatchNorm's statistics, training flags, optimizer state
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    assert not model.training
    assert not optimizer.state and all(p.grad is None for p in model.parameters())
    assert all(g["foreach"] is None and g["fused"] is None for g in optimizer.param_groups)
    assert not torch.is_autocast_enabled("cpu") and torch.is_grad_enabled()
    assert not any("forward" in m.__dict__ for m in model.modules())

    # what each run held as it ended, on the model's device (the host here): AdamW's two
    # moments and a step count a parameter, a gradient a parameter
    params = sum(p.numel() * 4 for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    base = result.baseline
    assert base.weights == params + buffers and base.gradients == params
    assert 2 * params <= base.optimizer_state <= 2 * params + 64 * len(list(model.parameters()))
    assert base.activations is None and base.reserved_peak is None  # (no GPU figure)
    assert "made of" not in str(result)  # (the step runs on no GPU: no such table)


def test_the_fixes_asked_for_run_in_their_order_and_the_model_found_is_named(mon):
    _, _, train_step, _ = _training()
    head = torch.nn.Linear(2, 2)  # (fewer parameters: not the model)

    def step_with_two_modules() -> None:
        train_step()
        head(torch.randn(1, 2))

    result = mon.whatif(step_with_two_modules, fixes=["foreach=False", "amp", "amp_uncached"])
    assert [row.fix for row in result.rows] == ["foreach=False", "amp", "amp_uncached"]
    assert result.rows[2].applied and "cache_enabled=False" in result.rows[2].note
    # the module of the most parameters, found through train_step's own variables
    assert result.run.model_name == "model" and result.run.model_type == "Sequential"
    text = repr(result)
    assert text.splitlines()[0].startswith(
        "nbgpumon.whatif: step_with_two_modules on model (Sequential), peak allocated on no GPU"
    )
    assert "foreach=False" in text and "amp" in text
    assert "not applied" not in text


def test_an_evaluation_step_runs_under_no_grad(mon):
    model, _, _, _ = _training()
    model.eval()

    def evaluate() -> None:
        model(torch.randn(8, 16)).sum()

    result = mon.whatif(evaluate, fixes="no_grad", model=model)
    (row,) = result.rows
    assert row.applied and row.note == "" and row.seconds is not None


def test_a_step_that_raises_is_one_line_with_its_run_and_leaves_nothing_changed(mon):
    model, optimizer, _, _ = _training()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    runs = []

    def failing() -> None:
        runs.append(torch.is_autocast_enabled("cpu"))
        model(torch.randn(8, 16)).square().mean().backward()
        optimizer.step()
        if torch.is_autocast_enabled("cpu"):
            raise ValueError("no half precision here")

    with pytest.raises(UsageError) as raised:
        mon.whatif(failing, fixes=["amp"])
    line = str(raised.value)
    assert "\n" not in line
    assert line == (
        "whatif: the step raised in whatif amp, and nothing was left changed: "
        "ValueError: no half precision here"
    )
    assert runs == [False, False, True, True]  # warm-up, baseline, amp unmeasured, measured
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    assert not optimizer.state and not torch.is_autocast_enabled("cpu")

    def broken() -> None:
        raise KeyError("batch")

    with pytest.raises(UsageError, match=r"in the warm-up, and nothing .*: KeyError: 'batch'$"):
        mon.whatif(broken, model=model)


def test_bad_input_is_one_line_that_says_what_to_do(mon):
    _, _, train_step, _ = _training()
    cases = [
        ({"step": 3}, "whatif(step) takes the function that runs one step"),
        ({"fixes": "ampp"}, "no fix named 'ampp' (did you mean 'amp'?)"),
        ({"fixes": ["zzz"]}, "no fix named 'zzz': one of amp, checkpointing"),
        ({"fixes": ["accumulate=4"]}, "give the batch size, size=N"),
        ({"fixes": ["accumulate=1"], "size": 8}, "2 or more: accumulate=4"),
        ({"fixes": ["accumulate=16"], "size": 8}, "needs a size of 16 or more, not 8"),
        ({"size": 0}, "a positive whole number, not 0"),
        ({"model": "net"}, "model= takes a torch.nn.Module, not str"),
    ]
    for given, says in cases:
        arguments = {"step": train_step, **given}
        with pytest.raises(UsageError) as raised:
            mon.whatif(**arguments)
        assert says in str(raised.value), (given, str(raised.value))
        assert "\n" not in str(raised.value)


def test_without_a_gpu_or_a_model_it_says_so(mon):
    nvml = fake_pynvml(devices=[])
    none = Monitor(nvml_module=nvml)
    try:
        with pytest.raises(UsageError, match="this machine shows no GPU"):
            none.whatif(lambda: None)
    finally:
        none.close()
    with pytest.raises(UsageError, match=r"found no model .*whatif\(step, model=net\)"):
        mon.whatif(lambda: None)


def test_the_result_shows_as_a_table_in_html_with_user_text_escaped(mon):
    model, _, _, _ = _training()
    step = eval("lambda: model(torch.randn(4, 16)).sum()", {"model": model, "torch": torch})
    result = mon.whatif(step, fixes=["amp"], model=model)
    page = result._repr_html_()
    assert "&lt;lambda&gt;" in page and "<lambda>" not in page
    assert page.count("<tr>") == 3  # the heads, the baseline, amp
    assert str(result).count("\n") == 3


STEP_CELL = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 1))
optimizer = torch.optim.AdamW(model.parameters())
def train_step(n):
    optimizer.zero_grad()
    model(torch.randn(n, 16)).square().mean().backward()
    optimizer.step()
"""


def test_the_magic_runs_a_step_of_the_namespace_by_name():
    env = fake_nvml_env(devices=[{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}])
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            STEP_CELL,
            "%gpumon whatif train_step amp accumulate=2 --size 8",
            "%gpumon whatif nothing_here",
            "%gpumon whatif train_step --size x",
            "%gpumon whatif train_step ampp --size 8",
        ],
        env=env,
    )
    lines = runs[2].text.splitlines()
    assert lines[0].startswith("nbgpumon.whatif: train_step, size 8 on model (Sequential)")
    assert [line.split()[0] for line in lines[2:]] == ["baseline", "amp", "accumulate=2"]
    assert "2 micro-batches of 4" in lines[-1]
    for run, says in zip(
        runs[3:],
        [
            "whatif: no function named 'nothing_here'",
            "--size takes a positive whole number",
            "did you mean 'amp'?",
        ],
        strict=True,
    ):
        assert says in run.text and "Traceback" not in run.text, run.text


class OutOfMemoryError(RuntimeError):
    """Named as torch's is: what ``whatif`` takes for running out of memory."""


def test_a_run_that_runs_out_of_memory_is_a_row_that_says_so_and_the_next_runs(mon):
    _, optimizer, train_step, _ = _training()
    made: list[weakref.ref] = []  # what each run allocated
    alive: list[int] = []  # at each run's start: how much of the earlier runs' is still held

    def step() -> None:
        alive.append(sum(ref() is not None for ref in made))
        block = torch.ones(256, 1024)
        made.append(weakref.ref(block))
        train_step()
        if torch.is_autocast_enabled("cpu"):
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    result = mon.whatif(step, fixes=["amp", "foreach=False"])
    amp, foreach = result.rows
    assert amp.applied and amp.out_of_memory and amp.note == "ran out of memory"
    assert foreach.applied and not foreach.out_of_memory
    regions = {c.index: c for c in mon.cells() if c.kind == "region"}
    assert regions[amp.record].status == "oom"
    assert not optimizer.state and not torch.is_autocast_enabled("cpu")
    assert "ran out of memory" in str(result)
    # the runs out of memory left nothing held: their frames went before the next run
    assert len(alive) == 6 and not any(alive), alive


def test_on_a_gpu_the_result_says_what_each_runs_peak_is_made_of():
    from nbgpumon._session.analysis.whatif import TrialRow, WhatifRun

    mib = 2**20
    base = TrialRow("baseline", True, 900 * mib, 0.2, exact=True, activations=600 * mib,
                    weights=100 * mib, gradients=100 * mib, optimizer_state=200 * mib,
                    reserved_peak=1200 * mib)  # fmt: skip
    amp = TrialRow("amp", True, 600 * mib, 0.1, exact=True, activations=300 * mib,
                   weights=100 * mib, gradients=100 * mib, optimizer_state=200 * mib,
                   reserved_peak=800 * mib)  # fmt: skip
    off = TrialRow("no_grad", False, note="the step calls backward (no_grad is for evaluation)")
    run = WhatifRun("train_step", base, (amp, off), "net", "<Net>", 4 * mib, 0, None)
    result = WhatifResult(run)
    text = str(result).splitlines()
    at = text.index("what each run's peak is made of:")
    heads, first, second = (line.split("  ") for line in text[at + 1 : at + 4])
    assert [c.strip() for c in heads if c.strip()][:3] == ["fix", "activations", "vs baseline"]
    assert [c.strip() for c in first if c.strip()] == [
        "baseline", "600 MiB", "200 MiB", "100 MiB", "1.2 GiB",
    ]  # fmt: skip
    assert [c.strip() for c in second if c.strip()] == [
        "amp", "300 MiB", "−50%", "200 MiB", "100 MiB", "800 MiB", "−33%",
    ]  # fmt: skip
    assert len(text) == at + 5 and text[-1].startswith("  activations: the part of the peak")
    page = result._repr_html_()
    assert page.count("<table>") == 2 and "&lt;Net&gt;" in page and "<Net>" not in page
    assert page.count("<tr>") == 4 + 3  # heads and three runs; heads and the two that ran


def test_a_compiled_model_is_said_to_recompile_in_the_unmeasured_runs(mon):
    model, optimizer, _, _ = _training()
    compiled = torch.compile(model, backend="eager")  # (no compiler needed)

    def train_step() -> None:
        optimizer.zero_grad()
        compiled(torch.randn(8, 16)).square().mean().backward()
        optimizer.step()

    result = mon.whatif(train_step, fixes=["amp"], model=compiled)
    assert result.run.compiled and result.rows[0].applied
    assert "compiled: a fix that changes .training or the dtypes recompiles it" in str(result)
    plain = mon.whatif(train_step, fixes=["amp"], model=model)
    assert not plain.run.compiled and "compiled" not in str(plain)
