"""NVTX cell ranges without a GPU: which ranges a session pushes and pops (a stand-in
``torch.cuda.nvtx`` at the library boundary that logs each call with its thread), the real
CPU build of torch, and ``%gpumon nvtx`` in a real kernel."""

from __future__ import annotations

import sys
import threading
from types import ModuleType, SimpleNamespace

import pytest

from nbgpumon._api.monitor import Monitor
from nbgpumon._session.controls.nvtx_ranges import NvtxRanges, range_name
from nbgpumon._views.cell_end import cell_lines
from nbgpumon._views.status.nvtx import nvtx_line

from fake_shell import shell_with
from notebook_runner import run_cells


class FakeNvtx:
    """``torch.cuda.nvtx``'s push and pop: each call logged as (thread, "push NAME" | "pop")."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.fail: Exception | None = None

    def range_push(self, name: str) -> int:
        if self.fail is not None:
            raise self.fail
        self.log.append((threading.current_thread().name, f"push {name}"))
        return 0

    def range_pop(self) -> int:
        self.log.append((threading.current_thread().name, "pop"))
        return 0

    def calls(self) -> list[str]:
        return [call for _, call in self.log]


@pytest.fixture
def torch(monkeypatch):
    torch = ModuleType("torch")
    torch.__version__ = "2.11.0"
    nvtx = FakeNvtx()
    torch.cuda = SimpleNamespace(initialised=True, nvtx=nvtx)
    torch.cuda.is_initialized = lambda: torch.cuda.initialised
    torch._C = SimpleNamespace(_nvtx=object())  # a CUDA build has the bindings
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


@pytest.fixture
def session(torch):
    session = Monitor(nvml_module=None, shell=lambda: shell_with())
    yield session
    session.close()


def run(session: Monitor, count: int, source: str, body=None, error=None):
    """One cell, as the hooks run it: begin, ``body()``, end (with ``error`` if it raised)."""
    opened = session.cell_pipeline.begin(count, source)
    if body is not None:
        body()
    status = "error" if error else "ok"
    return session.cell_pipeline.end(opened, status, str(error or ""), count, error)


def test_off_by_default_no_range_is_pushed(session, torch):
    run(session, 1, "x = 1")
    assert torch.cuda.nvtx.log == []
    assert session.nvtx(None) == "NVTX ranges are off"
    assert session.config.nvtx is False


def test_each_cell_is_a_range_named_by_its_count_and_first_line(session, torch):
    assert session.nvtx(True).startswith("NVTX ranges on: each cell is a range named [N] first")
    assert session.config.nvtx is True
    run(session, 2, "\n  y = model(batch)  # forward\nloss = y.sum()")
    run(session, 3, "z = " + "1 + " * 30 + "1")
    assert torch.cuda.nvtx.calls() == [
        "push [2] y = model(batch)  # forward",
        "pop",
        "push [3] z = 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 +…",  # 60 chars
        "pop",
    ]
    assert all(thread == "MainThread" for thread, _ in torch.cuda.nvtx.log)


def test_a_cell_that_turns_nvtx_on_pops_nothing_it_did_not_push(session, torch):
    run(session, 1, "%gpumon nvtx on", body=lambda: session.nvtx(True))
    assert torch.cuda.nvtx.calls() == []
    run(session, 2, "x = 1")
    assert torch.cuda.nvtx.calls() == ["push [2] x = 1", "pop"]


def test_a_cell_that_initialises_cuda_pops_nothing_and_the_next_is_a_range(session, torch):
    torch.cuda.initialised = False
    assert session.nvtx(True).endswith(
        "; they begin at the first cell after torch initialises CUDA"
    )
    assert session.nvtx(None) == "NVTX ranges are on (waiting for torch to initialise CUDA)"
    run(session, 1, "x = torch.ones(1, device='cuda')", body=lambda: setattr(
        torch.cuda, "initialised", True
    ))  # fmt: skip
    assert torch.cuda.nvtx.calls() == []
    run(session, 2, "y = x + 1")
    assert torch.cuda.nvtx.calls() == ["push [2] y = x + 1", "pop"]


def test_a_cell_that_turns_nvtx_off_still_closes_its_range(session, torch):
    session.nvtx(True)
    run(session, 1, "%gpumon nvtx off", body=lambda: session.nvtx(False))
    run(session, 2, "x = 1")
    assert torch.cuda.nvtx.calls() == ["push [1] %gpumon nvtx off", "pop"]
    assert session.config.nvtx is False


def test_a_cell_that_raises_closes_its_range(session, torch):
    session.nvtx(True)
    run(session, 1, "1 / 0", error=ZeroDivisionError("division by zero"))
    assert torch.cuda.nvtx.calls() == ["push [1] 1 / 0", "pop"]


def test_a_region_is_a_range_inside_its_cells(session, torch):
    session.nvtx(True)

    def body():
        with session.track("epoch 3"):
            pass
        session.track("left open").__enter__()  # never exited: the cell's end closes it

    run(session, 5, "train()", body=body)
    assert torch.cuda.nvtx.calls() == [
        "push [5] train()",
        "push [5] epoch 3",
        "pop",
        "push [5] left open",
        "pop",
        "pop",
    ]


def test_a_region_on_another_thread_pushes_and_pops_there(session, torch):
    session.nvtx(True)

    def worker():
        with session.track("loader"):
            pass

    def body():
        thread = threading.Thread(target=worker, name="loader-thread")
        thread.start()
        thread.join()

    run(session, 7, "start_loader()", body=body)
    assert torch.cuda.nvtx.log == [
        ("MainThread", "push [7] start_loader()"),
        ("loader-thread", "push [7] loader"),
        ("loader-thread", "pop"),
        ("MainThread", "pop"),
    ]


def test_a_push_that_fails_turns_nvtx_off_with_one_line(session, torch):
    session.nvtx(True)
    torch.cuda.nvtx.fail = RuntimeError("NVTX functions not installed.\nmore")
    text = "\n".join(cell_lines(run(session, 1, "x = 1"), summary=False))
    assert text == (
        "nbgpumon: NVTX range_push failed; NVTX ranges off: RuntimeError: NVTX functions not "
        "installed."
    )
    assert torch.cuda.nvtx.calls() == []
    assert session.nvtx(None).startswith("NVTX ranges are off (NVTX range_push failed")


def test_the_setting_turns_ranges_on_and_off(session, torch, capsys):
    session.config.nvtx = True
    assert capsys.readouterr().out.startswith("nbgpumon: NVTX ranges on: ")
    run(session, 1, "x = 1")
    session.config.nvtx = False
    assert capsys.readouterr().out == "nbgpumon: NVTX ranges off\n"
    run(session, 2, "x = 2")
    assert torch.cuda.nvtx.calls() == ["push [1] x = 1", "pop"]


def test_closing_the_session_closes_an_open_range(session, torch):
    session.nvtx(True)
    session.cell_pipeline.begin(1, "%unload_ext nbgpumon")
    session.close()
    assert torch.cuda.nvtx.calls() == ["push [1] %unload_ext nbgpumon", "pop"]


def test_torch_without_nvtx_is_one_line_and_stays_off():
    real = pytest.importorskip("torch")
    if getattr(real._C, "_nvtx", None) is not None:
        pytest.skip("this torch has NVTX (a CUDA build)")
    ranges = NvtxRanges()
    assert nvtx_line(
        ranges.start()
    ) == f"NVTX ranges not possible: torch {real.__version__} has no NVTX " + ("(a CPU build?)")
    assert not ranges.enabled


def test_range_names():
    assert range_name(12, "\n\n  x = model(batch)\nmore") == "[12] x = model(batch)"
    assert range_name(None, "") == "[?]"
    assert len(range_name(3, "y" * 200)) == len("[3] ") + 60


def test_the_magic_in_a_real_kernel():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon nvtx",
            "%gpumon nvtx on",
            "%gpumon nvtx maybe",
            "%config GPUMon.nvtx = False",
            "%gpumon nvtx",
            "import sys\nprint('torch' in sys.modules)",
        ],
        timeout=120,
    )
    assert runs[1].stdout == "nbgpumon: NVTX ranges are off\n"
    assert runs[2].stdout.startswith("nbgpumon: NVTX ranges on: each cell is a range named [N]")
    assert runs[2].stdout.rstrip().endswith("after torch initialises CUDA")
    assert runs[3].stderr == "UsageError: usage: %gpumon nvtx on|off (alone: whether it is on)\n"
    assert runs[4].stdout == "nbgpumon: NVTX ranges off\n"
    assert runs[5].stdout == "nbgpumon: NVTX ranges are off\n"
    assert runs[6].stdout == "False\n"  # nothing imported torch


def test_on_a_cpu_build_of_torch_the_magic_says_why_once():
    real = pytest.importorskip("torch")
    if getattr(real._C, "_nvtx", None) is not None:
        pytest.skip("this torch has NVTX (a CUDA build)")
    runs = run_cells(
        ["import torch", "%load_ext nbgpumon", "%gpumon nvtx on", "x = 1", "%gpumon nvtx"],
        timeout=120,
    )
    why = f"torch {real.__version__} has no NVTX (a CPU build?)"
    # said by the command, not again at its cell's end nor after the next cell
    assert runs[2].stdout == f"nbgpumon: NVTX ranges not possible: {why}\n", runs[2].text
    assert runs[3].text == "", runs[3].text
    assert runs[4].stdout == f"nbgpumon: NVTX ranges are off ({why})\n", runs[4].text
