"""The holder scan and the post-mortem's reasoning, in-process with a stand-in shell."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from nbgpumon._forensics import holder_scan as holders
from nbgpumon._forensics.postmortem import OomFacts, fixes, parse_message
from nbgpumon._sources.torch_allocator import AllocatorStats

MIB = 2**20


def shell_with(**variables) -> SimpleNamespace:
    ns = {"Out": {}, "_": "", "__": "", "___": "", **variables}
    return SimpleNamespace(
        user_ns=ns,
        user_ns_hidden={"Out": ns["Out"], "_": "", "__": "", "___": ""},
        displayhook=SimpleNamespace(_="", __="", ___=""),
        InteractiveTB=SimpleNamespace(tb=None),
        last_execution_result=None,
    )


def by_name(scan: holders.HolderScan) -> dict[str, int]:
    return {h.name: h.bytes for h in scan.holders}


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
    assert scan.partial.startswith("stopped after 0 ms")


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


def _facts(holder_list, allocator=None, processes=()) -> OomFacts:
    scan = holders.HolderScan("cuda:0", tuple(holder_list), 0, 0, 0.0, "")
    return OomFacts("[5]", "", None, 0, "GPU", None, None, allocator, scan, tuple(processes))


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
