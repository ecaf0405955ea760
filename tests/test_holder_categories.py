"""The holder scan's breakdown by kind (parameters, gradients, optimizer state, buffers, arrays
held by variables, IPython's hidden references): real torch objects on the host, each
category held to the byte against the unique storages torch reports."""

from __future__ import annotations

import numpy as np
import pytest

from nbgpumon._forensics import holder_scan as holders
from nbgpumon._sources.frameworks.holder_walk import in_category_order

from fake_shell import shell_with, storage_bytes

MIB = 2**20


def test_a_trained_model_is_told_apart_by_kind_to_the_byte():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.BatchNorm1d(128), torch.nn.Linear(128, 8)
    )
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(16, 64)).sum().backward()
    opt.step()
    batch = torch.randn(32, 64)
    shell = shell_with(opt=opt, model=model, batch=batch)
    shell.user_ns["Out"][3] = torch.ones(MIB // 4)  # an output kept by IPython

    found = holders.scan(shell, "host").categories["host"]

    state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    assert found == {
        "parameters": storage_bytes(model.parameters()),
        "gradients": storage_bytes(p.grad for p in model.parameters()),
        "optimizer state": storage_bytes(state),
        "buffers": storage_bytes(model.buffers()),
        "arrays held by variables (torch)": storage_bytes([batch]),
        "outputs and tracebacks": MIB,
    }
    assert list(found) == in_category_order(found)  # in the stable order


def test_the_categories_hold_what_the_holders_hold():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(256, 256)
    model(torch.ones(2, 256)).sum().backward()
    weight = model.weight  # a parameter held apart from its module: still a parameter
    shared = np.ones(MIB // 8)
    as_tensor = torch.from_numpy(shared)  # numpy's memory: one storage, counted once
    scan = holders.scan(shell_with(weight=weight, shared=shared, as_tensor=as_tensor), "host")
    host = scan.categories["host"]
    assert host == {
        "parameters": storage_bytes([weight]),
        "gradients": storage_bytes([weight.grad]),
        "arrays held by variables (numpy)": MIB,  # (the first holder of the storage)
    }
    assert sum(host.values()) == scan.total


def test_only_the_optimizer_held_still_gives_its_parameters_as_parameters():
    torch = pytest.importorskip("torch")
    params = [torch.nn.Parameter(torch.ones(1024))]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    params[0].sum().backward()
    opt.step()
    del params
    host = holders.scan(shell_with(opt=opt), "host").categories["host"]
    (param,) = opt.param_groups[0]["params"]
    assert host == {
        "parameters": storage_bytes([param]),
        "optimizer state": storage_bytes([opt.state[param]["momentum_buffer"]]),
    }


def test_a_traceback_s_arrays_are_hidden_references():
    def step():
        activations = np.ones(MIB // 8)  # noqa: F841 - held by the traceback
        raise RuntimeError("out of memory")

    shell = shell_with(kept=np.ones(2 * MIB // 8))
    try:
        step()
    except RuntimeError as exc:
        shell.last_execution_result = type("R", (), {"error_in_exec": exc, "result": None})()
    host = holders.scan(shell, "host").categories["host"]
    assert host == {"arrays held by variables (numpy)": 2 * MIB, "outputs and tracebacks": MIB}


def test_the_holders_words_say_the_kinds_on_each_device():
    torch = pytest.importorskip("torch")
    from nbgpumon._views.memory.holders import holders_lines

    model = torch.nn.Linear(512, 512)  # 1 MiB of weights, 2 KiB of bias
    model(torch.ones(1, 512)).sum().backward()
    lines = holders_lines(holders.scan(shell_with(model=model), "host"))
    assert "  by kind, host memory: parameters 1.0 MiB · gradients 1.0 MiB" in lines


def _jax_bytes(tree) -> int:
    """What the arrays of pytree ``tree`` hold, each buffer once."""
    import jax

    seen = {}
    for leaf in jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, jax.Array):
            for shard in leaf.addressable_shards:
                seen[shard.data.unsafe_buffer_pointer()] = shard.data.nbytes
    return sum(seen.values())


def test_flax_nnx_and_optax_are_told_apart_by_kind_to_the_byte(recwarn):
    """A real flax nnx model (a Linear and a BatchNorm) and its nnx optimizer (optax's AdamW),
    on JAX's CPU backend (host memory: the same walk as a GPU's): its Params, BatchStats and
    optimizer state each equal the bytes of their own arrays; reading them warns of nothing."""
    pytest.importorskip("flax")
    optax = pytest.importorskip("optax")
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.dense = nnx.Linear(64, 128, rngs=rngs)
            self.norm = nnx.BatchNorm(128, rngs=rngs)

    model = Net(nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    found = holders.scan(shell_with(opt=opt, model=model), "host").categories["host"]

    assert found == {
        "parameters": _jax_bytes(nnx.state(model, nnx.Param)),
        "optimizer state": _jax_bytes(nnx.state(opt, nnx.training.optimizer.OptState)),
        "buffers": _jax_bytes(nnx.state(model, nnx.BatchStat)),
    }
    assert found["optimizer state"] >= 2 * found["parameters"]  # (Adam's two moments)
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_a_flax_train_state_and_a_bare_optax_state_are_told_apart_by_kind():
    pytest.importorskip("flax")
    optax = pytest.importorskip("optax")
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from flax.training import train_state

    dense = nn.Dense(256)
    params = dense.init(jax.random.key(0), jnp.ones((1, 64)))["params"]
    tx = optax.adamw(1e-3)
    state = train_state.TrainState.create(apply_fn=dense.apply, params=params, tx=tx)
    found = holders.scan(shell_with(state=state), "host").categories["host"]
    assert found == {
        "parameters": _jax_bytes(state.params),
        "optimizer state": _jax_bytes(state.opt_state),
    }
    # linen's parameters are a plain dict (nothing says they are parameters); optax's state
    # is its own NamedTuples, wherever it is held
    opt_state = tx.init(params)
    bare = holders.scan(shell_with(params=params, opt_state=opt_state), "host").categories
    assert bare["host"] == {
        "optimizer state": _jax_bytes(opt_state),
        "arrays held by variables (JAX)": _jax_bytes(params),
    }


def test_arrays_held_by_variables_are_told_apart_by_framework():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    tensor, array = torch.ones(MIB // 4), np.ones(2 * MIB // 8)
    jax_array = jnp.ones(3 * MIB // 4, dtype=jnp.float32)
    kept = [tensor, array, jax_array]  # one container, three frameworks' arrays in it
    found = holders.scan(shell_with(kept=kept), "host").categories["host"]
    assert found == {
        "arrays held by variables (torch)": MIB,
        "arrays held by variables (numpy)": 2 * MIB,
        "arrays held by variables (JAX)": _jax_bytes(jax_array),
    }
    assert list(found) == in_category_order(found)
    # the order of the categories puts each framework's arrays where "arrays held by variables"
    # stands; a recording's unsplit name keeps its place too
    assert in_category_order(
        ["outputs and tracebacks", "arrays held by variables (JAX)", "gradients",
         "arrays held by variables", "unexplained"]
    ) == ["gradients", "arrays held by variables (JAX)", "arrays held by variables",
          "outputs and tracebacks"]  # fmt: skip
