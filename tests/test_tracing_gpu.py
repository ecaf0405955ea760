"""On a real NVIDIA GPU (``pytest -m gpu``): allocation tracing in a real kernel.

The tracer is driven from the kernel's own ``pre_run_cell``/``post_run_cell`` events, as the
``%gpumon trace`` wiring will drive it, and prints one ``TRACED`` line per surviving group.
"""

from __future__ import annotations

import pytest

from notebook_runner import run_cells

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
GIB = 2**30

SETUP = """\
import sys
from nbgpumon.tracing import AllocationTracer, format_traced
ip = get_ipython()
tr = AllocationTracer(ip)
print('START', tr.start())
print('TORCH', 'torch' in sys.modules)

def _pre(info):
    tr.cell_started(ip.execution_count - 1)  # IPython counts the cell before this event

def _post(result):
    for a in tr.cell_finished(result.execution_count):
        print('TRACED', a.cell, a.line, a.bytes, a.caller_cell, a.caller_line, '|',
              format_traced(a))
    if tr.error:
        print('TRACE-ERROR', tr.error)

ip.events.register('pre_run_cell', _pre)
ip.events.register('post_run_cell', _post)"""
KEEP_1GIB = "import torch\ny = torch.empty(2**30, dtype=torch.uint8, device='cuda')"


def _traced(run) -> list[tuple[list[str], str]]:
    """(cell, line, bytes, caller_cell, caller_line) as strings, and the formatted line."""
    rows = []
    for line in run.stdout.splitlines():
        if line.startswith("TRACED "):
            fields, text = line[len("TRACED ") :].split(" | ", 1)
            rows.append((fields.split(), text))
    return rows


@pytest.fixture(scope="module")
def traced_run():
    return run_cells(
        [
            SETUP,  # In[1]: armed, torch not imported yet
            "import torch\nx0 = torch.empty(2**20, dtype=torch.uint8, device='cuda')",  # In[2]
            "print('ACTIVE', tr.active, tr.start())",  # In[3]
            KEEP_1GIB,  # In[4]
            "def make(n):\n    return torch.empty(n, dtype=torch.uint8, device='cuda')",  # In[5]
            "z = make(2**29)",  # In[6]
            "t = torch.empty(2**30, dtype=torch.uint8, device='cuda'); del t",  # In[7]
            KEEP_1GIB,  # In[8]: the same text as In[4], so the same cell file
            "print('STOP', tr.stop(), torch._C._cuda_isHistoryEnabled())",  # In[9]
        ],
        timeout=300,
    )


def test_trace_on_before_cuda_arms_without_importing_torch(traced_run):
    assert traced_run[0].error is None, traced_run[0].text
    start, torch_line = traced_run[0].stdout.splitlines()[:2]
    assert start.startswith("START allocation tracing armed")
    assert torch_line == "TORCH False"


def test_recording_starts_after_the_cell_that_initialised_cuda(traced_run):
    assert _traced(traced_run[1]) == []  # that cell itself is not traced
    assert traced_run[2].stdout.strip() == "ACTIVE True allocation tracing is already on"


def test_a_kept_tensor_is_attributed_to_its_cell_and_line_with_exact_bytes(traced_run):
    assert _traced(traced_run[3]) == [
        (
            ["4", "2", str(GIB), "None", "None"],
            "[4] line 2: y = torch.empty(2**30, dtype=torch.uint8, device='cuda') — 1.0 GiB",
        )
    ]


def test_a_function_from_an_earlier_cell_names_both_cells(traced_run):
    assert _traced(traced_run[4]) == []  # defining it allocates nothing
    assert _traced(traced_run[5]) == [
        (
            ["5", "2", str(GIB // 2), "6", "1"],
            "[6] line 1 → [5] line 2: return torch.empty(n, dtype=torch.uint8, device='cuda') "
            "— 512.0 MiB",
        )
    ]


def test_memory_freed_within_the_cell_is_not_reported(traced_run):
    assert _traced(traced_run[6]) == []


def test_a_rerun_of_identical_text_is_attributed_to_the_new_count(traced_run):
    ((fields, _),) = _traced(traced_run[7])
    assert fields == ["8", "2", str(GIB), "None", "None"]


def test_trace_off_stops_torchs_recorder_and_nothing_went_wrong(traced_run):
    assert traced_run[8].stdout.strip() == "STOP allocation tracing off False"
    assert not any("TRACE-ERROR" in r.stdout for r in traced_run)
