"""On real NVIDIA GPUs (``pytest -m gpu``): ``CUDA_VISIBLE_DEVICES`` in real kernels. The
kernel's ``cuda:N`` is mapped to NVML's physical GPU before torch initialises CUDA (from the
variable) and after (by UUID); the ledger, holders, status and snapshot name the right physical
GPU; a hidden GPU is "not visible to this kernel" and keeps its NVML figures.

The first tests need one GPU. Those after ``-- two GPUs`` need two and skip otherwise: a probe
subprocess, without ``CUDA_VISIBLE_DEVICES``, counts torch's devices. NVML's order is PCI bus
order; integer entries are CUDA's order, which ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` makes PCI's too,
so each kernel here that uses integers sets it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from kernel_client import Kernel
from notebook_runner import (
    DEVICES_CELL,
    RECORDS_CELL,
    WAIT_FOR_ALLOCATOR_READS,
    cells_by_label,
    run_cells,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu
GIB = 2**30
NOT_VISIBLE = "not visible to this kernel"
PCI_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

_PROBE = (
    "import json, pynvml, torch\n"
    "pynvml.nvmlInit()\n"
    "uuids = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))\n"
    "         for i in range(pynvml.nvmlDeviceGetCount())]\n"
    "uuids = [u.decode() if isinstance(u, bytes) else u for u in uuids]\n"
    "print(json.dumps({'cuda': torch.cuda.device_count(), 'uuids': uuids}))"
)


def _probe() -> dict:
    """torch's device count and NVML's UUIDs, from a process that sees every GPU."""
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return {"cuda": 0, "uuids": []}


MACHINE = _probe()
needs_one = pytest.mark.skipif(
    MACHINE["cuda"] < 1 or not MACHINE["uuids"], reason="needs a CUDA GPU that NVML lists"
)
needs_two = pytest.mark.skipif(
    MACHINE["cuda"] < 2 or len(MACHINE["uuids"]) < 2,
    reason=f"needs two CUDA GPUs; torch sees {MACHINE['cuda']} without CUDA_VISIBLE_DEVICES",
)


def _cells(run) -> dict[str, dict]:
    return cells_by_label(run.json_after("RECORDS="))


def _mapping(run) -> dict[int, int | None]:
    """{NVML index: CUDA index} from a DEVICES_CELL's output."""
    return {index: cuda for index, cuda, _ in run.json_after("DEVICES=")}


def _labels(run) -> dict[int, str]:
    return {index: label for index, _, label in run.json_after("DEVICES=")}


# -- one GPU ----------------------------------------------------------------------------------
ONE_GIB_CELL = "y = torch.empty(2**30, dtype=torch.uint8, device='cuda')"


@needs_one
def test_by_uuid_the_one_gib_cell_lands_on_nvml_gpu0_which_is_cuda0():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            DEVICES_CELL,  # 1: before torch initialises CUDA (from CUDA_VISIBLE_DEVICES)
            "import torch\nfirst = torch.empty(1, device='cuda')  # initialises CUDA",
            ONE_GIB_CELL,  # 3
            WAIT_FOR_ALLOCATOR_READS,  # torch's first read maps by UUID
            DEVICES_CELL,  # 5: after
            "%gpumon status",
            "%gpumon snapshot",
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": MACHINE["uuids"][0]},
        timeout=300,
    )
    others = {i: None for i in range(1, len(MACHINE["uuids"]))}  # hidden, on a bigger machine
    assert _mapping(runs[1]) == {0: 0, **others}
    assert runs[4].stdout.split() == ["TICKS", "True"]
    assert _mapping(runs[5]) == {0: 0, **others}
    label = _labels(runs[5])[0]
    assert label.startswith("gpu0 NVIDIA") and label.endswith("(cuda:0)"), label
    kept = _cells(runs[-1])[ONE_GIB_CELL]
    assert kept["gpu0.allocated_delta"] == GIB and kept["gpu0.retained"] == GIB
    assert kept["gpu0.peak_exact"] is True
    assert kept["gpu0.nvml_used_delta"] >= GIB  # the driver saw it on physical GPU 0
    uuid = re.escape(MACHINE["uuids"][0])
    assert re.search(rf"gpu0: NVIDIA[^,]*, {uuid}, cuda:0, ", runs[6].text), runs[6].text
    assert "  torch: active: cuda:0 " in runs[6].text
    assert f"{label}:" in runs[7].text


@needs_one
def test_an_empty_cuda_visible_devices_hides_the_gpu_and_nothing_breaks():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import torch\n"
            "print('AVAILABLE', torch.cuda.is_available(), torch.cuda.device_count())",
            "x = torch.ones(2**20)  # on the CPU",
            WAIT_FOR_ALLOCATOR_READS,
            "%gpumon status",
            "%gpumon snapshot",
            "%gpumon cells",
            DEVICES_CELL,
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": ""},
        timeout=300,
    )
    assert [r.error for r in runs] == [None] * len(runs), [r.text for r in runs if r.error]
    assert runs[1].stdout.split() == ["AVAILABLE", "False", "0"]
    assert NOT_VISIBLE in runs[0].text  # the load line says so
    count = len(MACHINE["uuids"])
    assert _mapping(runs[7]) == {i: None for i in range(count)}
    status, snapshot = runs[4].text, runs[5].text
    assert status.count(f", {NOT_VISIBLE}, ") == count, status
    assert "torch: active" not in status, status  # CUDA is not up: torch is never read
    for label in _labels(runs[7]).values():
        assert label.endswith(f"({NOT_VISIBLE})") and f"{label}:" in snapshot, snapshot
    assert "used (NVML)" in snapshot  # NVML still reads the GPU: the device's view is true
    cell = _cells(runs[-1])["x = torch.ones(2**20)  # on the CPU"]
    assert cell.get("gpu0.allocated_delta") is None  # no figure of this kernel's on a hidden GPU


# -- two GPUs ---------------------------------------------------------------------------------
ON_CUDA0 = "y = torch.empty(2**30, dtype=torch.uint8, device='cuda:0')"


def _visible(kind: str) -> str:
    """CUDA_VISIBLE_DEVICES for ``kind``: "1", "1,0", or "uuid" (GPU 1's UUID)."""
    return MACHINE["uuids"][1] if kind == "uuid" else kind


@needs_two
@pytest.mark.parametrize("kind", ["1", "uuid", "1,0"])
def test_the_kernels_cuda0_is_nvml_gpu1_before_and_after_torch_initialises_cuda(kind):
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            DEVICES_CELL,  # 1: before
            "import torch\nfirst = torch.empty(1, device='cuda:0')  # initialises CUDA",
            ON_CUDA0,  # 3
            WAIT_FOR_ALLOCATOR_READS,
            DEVICES_CELL,  # 5: after (by UUID)
            "%gpumon holders cuda:0",
            "%gpumon snapshot",
            "%gpumon status",
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": _visible(kind), **PCI_ORDER},
        timeout=300,
    )
    rest = {i: None for i in range(2, len(MACHINE["uuids"]))}
    want = {0: 1, 1: 0, **rest} if kind == "1,0" else {0: None, 1: 0, **rest}
    assert _mapping(runs[1]) == want
    assert runs[4].stdout.split() == ["TICKS", "True"]
    assert _mapping(runs[5]) == want
    labels = _labels(runs[5])
    assert labels[1].endswith("(cuda:0)")
    assert labels[0].endswith("(cuda:1)" if kind == "1,0" else f"({NOT_VISIBLE})")
    kept = _cells(runs[-1])[ON_CUDA0]
    assert kept["gpu1.retained"] == GIB and kept["gpu1.peak_exact"] is True
    assert kept["gpu1.nvml_used_delta"] >= GIB  # the driver saw it on physical GPU 1
    assert (kept.get("gpu0.retained") or 0) == 0  # never charged to GPU 0
    assert abs(kept["gpu0.nvml_used_delta"]) < GIB // 2
    holders = runs[6].text
    assert re.search(r"^\s+y\s+1\.0 GiB", holders, re.MULTILINE), holders
    assert f"{labels[1]}:" in runs[7].text and f"{labels[0]}:" in runs[7].text
    status = runs[8].text
    assert re.search(r"gpu1: .*, cuda:0, ", status), status
    assert re.search(r"gpu0: .*, " + ("cuda:1" if kind == "1,0" else NOT_VISIBLE), status), status


BOTH_CELL = (
    "a = torch.empty(2**30, dtype=torch.uint8, device='cuda:0')\n"
    "b = torch.empty(2 * 2**30, dtype=torch.uint8, device='cuda:1')\n"
    "t = torch.empty(2**30, dtype=torch.uint8, device='cuda:1'); del t"
)


@needs_two
def test_tensors_on_both_gpus_in_one_cell_are_exact_per_gpu_and_each_view_shows_both():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import torch\nfor i in range(2):\n    torch.zeros(1, device=f'cuda:{i}')",  # contexts
            WAIT_FOR_ALLOCATOR_READS,
            "%gpumon summary on",
            BOTH_CELL,  # 4: its summary line
            "%gpumon summary off",
            "%gpumon cells",  # 6
            "%gpumon holders cuda:1",  # 7
            "%gpumon holders cuda:0",  # 8
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": "0,1", **PCI_ORDER},
        timeout=300,
    )
    cell = _cells(runs[-1])[BOTH_CELL.splitlines()[0]]
    assert cell["gpu0.retained"] == GIB and cell["gpu1.retained"] == 2 * GIB
    assert cell["gpu0.peak_exact"] is True and cell["gpu1.peak_exact"] is True
    assert cell["gpu0.peak_allocated"] - cell["gpu0.allocated_before"] == GIB
    assert cell["gpu1.peak_allocated"] - cell["gpu1.allocated_before"] == 3 * GIB
    line = runs[4].stdout
    assert re.search(r"gpu0 \(cuda:0\): \+1\.0 GiB alloc, peak 1\.0 GiB, kept 1\.0 GiB", line), line
    assert re.search(r"gpu1 \(cuda:1\): \+3\.0 GiB alloc, peak 3\.0 GiB, kept 2\.0 GiB", line), line
    table = runs[6].text
    assert "gpu0 (cuda:0) 1.0 GiB; gpu1 (cuda:1) 3.0 GiB" in table, table  # peak
    assert "gpu0 (cuda:0) 1.0 GiB; gpu1 (cuda:1) 2.0 GiB" in table, table  # kept
    on_1, on_0 = runs[7].text, runs[8].text
    assert re.search(r"^\s+b\s+2\.0 GiB", on_1, re.MULTILINE), on_1
    assert not re.search(r"^\s+a\s", on_1, re.MULTILINE), on_1  # GPU 0's tensor is not listed
    assert "process on gpu0" not in on_1  # only GPU 1's processes
    assert re.search(r"^\s+a\s+1\.0 GiB", on_0, re.MULTILINE), on_0
    assert not re.search(r"^\s+b\s", on_0, re.MULTILINE), on_0


def _text(messages: list[dict]) -> str:
    parts = []
    for m in messages:
        content = m.get("content", {})
        if m["msg_type"] == "stream":
            parts.append(content.get("text", ""))
        elif m["msg_type"] in ("execute_result", "display_data"):
            parts.append(content.get("data", {}).get("text/plain", ""))
        elif m["msg_type"] == "error":
            parts.append(f"{content['ename']}: {content['evalue']}")
    return "".join(parts)


def _kernel_on(visible: str) -> Kernel:
    """A kernel started with ``CUDA_VISIBLE_DEVICES=visible`` (the environment it inherits)."""
    saved = dict(os.environ)
    try:
        os.environ.update({"CUDA_VISIBLE_DEVICES": visible, **PCI_ORDER})
        return Kernel()
    finally:
        os.environ.clear()
        os.environ.update(saved)


# Waits (deadline 60 s) until NVML's process list has both kernels, then prints it.
BOTH_LISTED = (
    "import time, nbgpumon\n_m = nbgpumon.monitor()\n_d = time.monotonic() + 60\n"
    "_seen = lambda: {p.pid for p in _m._session.process_source.processes} & set(PIDS)\n"
    "while len(_seen()) < 2 and time.monotonic() < _d:\n"
    "    time.sleep(0.05)\n"
    "from nbgpumon._views.status.session_status import process_lines\n"
    "print('\\n'.join(process_lines(_m.data.status())))"
)


@needs_two
def test_two_kernels_one_per_gpu_each_marks_itself_on_its_own_gpu_and_the_other_as_another():
    kernels = [_kernel_on("0"), _kernel_on("1")]
    try:
        pids = []
        for k in kernels:
            k.run("%load_ext nbgpumon", timeout=120)
            k.run("import torch\nx = torch.empty(2**30, dtype=torch.uint8, device='cuda')")
            pids.append(int(_text(k.run("import os; print(os.getpid())")).strip()))
        listed = []
        for k in kernels:
            k.run(f"PIDS = {pids!r}")
            listed.append(_text(k.run(BOTH_LISTED, timeout=90)))
    finally:
        for k in kernels:
            k.stop()
    for mine, (gpu, pid) in enumerate(zip((0, 1), pids, strict=True)):
        text = listed[mine]
        other_gpu, other_pid = 1 - gpu, pids[1 - mine]
        assert re.search(rf"^gpu{gpu}: PID {pid} this kernel: ", text, re.MULTILINE), text
        assert re.search(rf"^gpu{other_gpu}: PID {other_pid} (?!this kernel)", text, re.M), text
        assert not re.search(rf"^gpu{other_gpu}: PID {pid} ", text, re.MULTILINE), text


@needs_two
def test_a_jax_array_on_gpu1_lands_on_gpu1s_row():
    pytest.importorskip("jax")
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import jax, jax.numpy as jnp\ng1 = jax.devices()[1]",  # the user starts JAX
            WAIT_FOR_ALLOCATOR_READS,
            "with jax.default_device(g1):\n"
            "    x = jnp.ones((2**28,), dtype=jnp.float32); x.block_until_ready()",
            "print('ON', x.devices())",
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": "0,1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **PCI_ORDER},
        timeout=300,
    )
    assert "id=1" in runs[4].stdout or "cuda:1" in runs[4].stdout, runs[4].text
    cell = _cells(runs[-1])["with jax.default_device(g1):"]
    assert cell["gpu1.jax.retained"] == GIB, cell
    assert (cell.get("gpu0.jax.retained") or 0) == 0, cell


@needs_two
def test_a_cupy_array_on_gpu1_lands_on_gpu1s_row():
    pytest.importorskip("cupy")
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import cupy as cp\nwith cp.cuda.Device(1):\n    cp.zeros(1)",  # its context
            WAIT_FOR_ALLOCATOR_READS,
            "with cp.cuda.Device(1):\n    y = cp.ones(2**28, dtype=cp.float32)",
            RECORDS_CELL,
        ],
        env={"CUDA_VISIBLE_DEVICES": "0,1", **PCI_ORDER},
        timeout=300,
    )
    cell = _cells(runs[-1])["with cp.cuda.Device(1):"]
    assert cell["gpu1.cupy.retained"] == GIB, cell
    assert (cell.get("gpu0.cupy.retained") or 0) == 0, cell
    assert cell["gpu1.nvml_used_delta"] >= GIB  # the driver saw it on physical GPU 1
