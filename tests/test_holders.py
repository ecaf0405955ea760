"""The holder scan and the post-mortem's reasoning, in-process with a stand-in shell."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from nbgpumon._api.holders import HolderReport
from nbgpumon._forensics import holder_scan as holders
from nbgpumon._forensics.postmortem import OomFacts, failing_framework, parse_message
from nbgpumon._ledger.kinds_notes import ScanCut
from nbgpumon._ledger.outcome import is_out_of_memory
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._views.memory.holders import holders_lines
from nbgpumon._views.memory.oom import fixes

from fake_shell import by_name, shell_with

MIB = 2**20


def test_views_share_their_owners_storage_and_are_counted_once():
    base = np.ones(MIB // 8)
    shell = shell_with(a=base, view=base[10:], copies=[base, base[::2]])
    assert by_name(holders.scan(shell, "host")) == {"a": MIB}


def test_modules_get_their_parameters_and_the_optimizer_only_its_state():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256))
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(4, 256)).sum().backward()
    opt.step()
    # the optimizer comes first in the namespace: modules are still walked first
    scan = holders.scan(shell_with(opt=opt, model=model), "host")
    params = sum(p.numel() * 4 for p in model.parameters())
    assert by_name(scan) == {"model": params, "model (grads)": params, "opt (state)": 2 * params
                             + sum(s["step"].nbytes for s in opt.state.values())}  # fmt: skip
    assert scan.holders[0].name == "opt (state)"  # biggest first


def test_hidden_references_are_named_and_marked():
    arr = np.ones(MIB // 8)
    shell = shell_with()
    shell.user_ns["Out"][7] = arr
    shell.user_ns_hidden["_9"] = np.ones(2 * MIB // 8)  # a copy `del _9` left behind
    scan = holders.scan(shell, "host")
    assert by_name(scan) == {"Out[7]": MIB, "_9 (IPython's hidden copy)": 2 * MIB}
    assert all(h.hidden for h in scan.holders)


def test_a_stored_traceback_names_the_frame_and_local():
    def train():
        batch = np.ones(MIB // 8)  # noqa: F841 - held by the traceback
        raise ValueError("bad")

    shell = shell_with()
    try:
        train()
    except ValueError as e:
        shell.InteractiveTB.tb = e.__traceback__
    scan = holders.scan(shell, "host")
    assert by_name(scan)["traceback frame train() local 'batch'"] == MIB


def test_a_spent_budget_gives_a_partial_answer_that_says_so():
    shell = shell_with(**{f"v{i}": [object() for _ in range(50)] for i in range(2000)})
    scan = holders.scan(shell, "host", budget=0.0)
    assert scan.partial == ScanCut(0.0, scan.objects) and scan.objects > 0
    looked = f"{scan.objects:,} object{'s' if scan.objects > 1 else ''}"
    assert holders_lines(scan)[-1] == (
        f"  (stopped after 0 ms ({looked} looked at): some holders may be missing)"
    )


def test_a_bad_device_is_refused():
    with pytest.raises(ValueError, match="cuda, cuda:N, host or any"):
        holders.scan(shell_with(), "gpu")


def test_the_oom_message_gives_the_request_and_the_device():
    message = (
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a total capacity of "
        "79.25 GiB of which 1.50 GiB is free."
    )
    assert parse_message(message) == (20 * MIB, 3)
    assert parse_message("RuntimeError: CUDA error: out of memory") == (None, None)


def _facts(holder_list, allocator=None, processes=(), framework="torch", **more) -> OomFacts:
    scan = holders.HolderScan("cuda:0", tuple(holder_list), 0, 0, 0.0, None)
    allocators = {"torch": allocator} if allocator is not None else {}
    allocators.update(more)
    return OomFacts(
        "[5]", "", None, 0, "GPU", None, None, allocators, scan, tuple(processes), framework
    )


def test_fixes_are_ranked_by_the_memory_they_give_back_with_the_generic_one_last():
    stats = AllocatorStats(
        allocated=10 * 2**30, reserved=14 * 2**30, active=0, inactive_split=0,
        peak_allocated=0, allocated_total=0, alloc_retries=0, ooms=1,
    )  # fmt: skip
    found = [
        holders.Holder("y", 2 * 2**30, 1, False),
        holders.Holder("Out[4]", 3 * 2**30, 1, True),
    ]
    ranked = fixes(_facts(found, stats))
    assert ranked[0].startswith("4.0 GiB is reserved by torch but unused")
    assert ranked[1].startswith("%gpumon free: drops outputs (Out, _N) (3.0 GiB)")
    assert ranked[2] == "del y (2.0 GiB) if you no longer need it"
    assert "gradient accumulation" in ranked[-1]


def _pool(in_use: int, pool: int) -> AllocatorStats:
    return AllocatorStats(
        allocated=in_use, reserved=pool, peak_allocated=None, allocated_total=None
    )


def test_a_torch_oom_names_jax_preallocation_and_cupy_cache_biggest_first():
    ranked = fixes(
        _facts([], jax=_pool(2**30, 100 * 2**30), cupy=_pool(0, 6 * 2**30), framework="torch")
    )
    assert ranked[0].startswith("JAX's pool holds 99.0 GiB it does not use"), ranked
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in ranked[0]
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" in ranked[0]
    assert ranked[1].startswith("CuPy's pool caches 6.0 GiB of freed blocks"), ranked
    assert "free_all_blocks()" in ranked[1]
    assert "gradient accumulation" in ranked[-1]


def test_a_jax_oom_names_torchs_idle_cache_as_another_frameworks():
    idle_torch = _pool(2**30, 9 * 2**30)
    ranked = fixes(_facts([], allocator=idle_torch, framework="jax"))
    assert ranked[0].startswith("8.0 GiB is reserved by torch (another framework's cache)")
    assert "jnp.bfloat16" in ranked[-1]


def test_jax_and_cupy_messages_give_the_requested_bytes():
    jax_text = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4294967296 bytes."
    cupy_text = "Out of memory allocating 1,073,741,824 bytes (allocated so far: 0 bytes)."
    assert parse_message(jax_text)[0] == 4 * 2**30
    assert parse_message(cupy_text)[0] == 2**30
    jax_011 = (
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.00TiB with allocator "
        "GPU_0_bfc on device 0. [tf-allocator-allocation-error='']"
    )  # as JAX 0.11 words it on the H200
    assert parse_message(jax_011) == (4 * 2**40, 0)


def test_the_failing_framework_comes_from_the_error():
    cupy_error = type("OutOfMemoryError", (Exception,), {"__module__": "cupy.cuda.memory"})
    jax_error = type("XlaRuntimeError", (RuntimeError,), {"__module__": "jaxlib._jax"})
    assert failing_framework(cupy_error("x")) == "cupy"
    assert failing_framework(jax_error("RESOURCE_EXHAUSTED: Out of memory")) == "jax"
    assert failing_framework(RuntimeError("RESOURCE_EXHAUSTED: out of memory")) == "jax"
    assert failing_framework(RuntimeError("CUDA out of memory")) == "torch"
    assert is_out_of_memory(jax_error("RESOURCE_EXHAUSTED: Out of memory while trying"))
    assert is_out_of_memory(cupy_error("Out of memory allocating 1 bytes"))
    assert not is_out_of_memory(jax_error("INVALID_ARGUMENT: bad shape"))


def test_no_evidence_no_specific_fix():
    assert len(fixes(_facts([]))) == 1


def test_scanning_never_imports_torch():
    import subprocess

    code = (
        "import sys, types\nfrom nbgpumon._forensics import holder_scan\n"
        "s = types.SimpleNamespace(user_ns={'x': [1, 2]}, user_ns_hidden={})\n"
        "holder_scan.scan(s, 'host')\nprint('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_public_answer_prints_as_the_holders_words():
    scan = holders.HolderScan(
        "host", (holders.Holder("x", 2**20, 1, True),), 2**20, 10, 0.001, None
    )
    report = HolderReport.of(scan)
    assert isinstance(report, holders.HolderScan) and report.holders == scan.holders
    assert repr(report) == report.text() == "\n".join(holders_lines(scan))
    assert repr(report).splitlines() == [
        "nbgpumon holders of host memory: 1.0 MiB in 1 holder, 10 objects looked at in 1 ms",
        "  x     1.0 MiB  1 storage  (hidden: %gpumon free drops it)",
    ]
