"""Run cells in a real IPython kernel through nbclient and read back what they printed."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import nbformat
from nbclient import NotebookClient

FAKE_NVML_DIR = Path(__file__).parent / "fake_nvml"


def _has_colab_runtime() -> bool:
    try:
        return importlib.util.find_spec("google.colab") is not None
    except ImportError:  # no "google" package at all
        return False


# The Colab leg (scripts/legs/colab) runs the kernel tests in Colab's runtime: its virtualenv has
# google.colab, and the "python3" kernelspec it puts first on JUPYTER_PATH starts Colab's kernel
# class, as Colab does. There `%gpumon` is the picture, so a test of the widget shows it the way a
# Colab user asks for it by name.
COLAB_RUNTIME = _has_colab_runtime()
SHOW_WIDGET = (
    "import nbgpumon as _nbg\nfrom IPython.display import display as _show\n"
    "_show(_nbg.monitor().widget())"
    if COLAB_RUNTIME
    else "%gpumon"
)
RECORDS_CELL = (
    "import json as _json, nbgpumon as _nbg\n"
    "from nbgpumon._views.frames import frame_row as _row\n"
    "print('RECORDS=' + _json.dumps([_row(r) for r in _nbg.cells()]))"
)
# Waits until the sampler has read the allocators a few times (a condition, not a sleep);
# prints "TICKS True" once it has, "TICKS False" at the 30 s deadline.
WAIT_FOR_ALLOCATOR_READS = (
    "import time as _t, nbgpumon as _n\n_m = _n.monitor()\n"
    "_w = _m._session.sampler.ticks + 4 * round(_m.config.allocator_interval / "
    "_m.config.interval) + 4\n"
    "_d = _t.monotonic() + 30\n"
    "while _m._session.sampler.ticks < _w and _t.monotonic() < _d:\n    _t.sleep(0.02)\n"
    "print('TICKS', _m._session.sampler.ticks >= _w)"
)
# Prints the session's GPUs as [NVML index, CUDA index (None: hidden), label] after "DEVICES=".
DEVICES_CELL = (
    "import json as _json, nbgpumon as _nbg\n"
    "print('DEVICES=' + _json.dumps("
    "[[d.index, d.cuda_index, d.label] for d in _nbg.monitor().data.devices]))"
)


def cells_by_label(records: list[dict]) -> dict[str, dict]:
    """The cell records (RECORDS_CELL's rows, not regions) by their first line."""
    return {r["label"]: r for r in records if r["kind"] == "cell"}


@dataclass
class CellRun:
    source: str
    outputs: list

    def stream(self, name: str) -> str:
        """Everything the cell wrote to the stream ``name`` ("stdout" or "stderr")."""
        return "".join(
            o.get("text", "")
            for o in self.outputs
            if o.get("output_type") == "stream" and o.get("name") == name
        )

    @property
    def stdout(self) -> str:
        return self.stream("stdout")

    @property
    def stderr(self) -> str:
        return self.stream("stderr")

    @property
    def error(self) -> str | None:
        for o in self.outputs:
            if o.get("output_type") == "error":
                return o.get("ename")
        return None

    @property
    def text(self) -> str:
        """Everything the cell showed, as text (streams, results, displays, errors)."""
        parts = []
        for o in self.outputs:
            if o.get("output_type") == "stream":
                parts.append(o.get("text", ""))
            elif o.get("output_type") in ("execute_result", "display_data"):
                parts.append(o.get("data", {}).get("text/plain", ""))
            elif o.get("output_type") == "error":
                parts.append(f"{o.get('ename')}: {o.get('evalue')}")
        return "".join(parts)

    def json_after(self, prefix: str):
        for line in self.stdout.splitlines():
            if line.startswith(prefix):
                return json.loads(line[len(prefix) :])
        raise AssertionError(f"no line starting {prefix!r} in output:\n{self.text}")


def run_cells(
    cells: list[str],
    env: Mapping[str, str] | None = None,
    timeout: int = 120,
    cwd: Path | None = None,
) -> list[CellRun]:
    """Execute ``cells`` in order in a fresh kernel; errors don't stop the run."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    saved = dict(os.environ)
    try:
        os.environ.update(env or {})
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=timeout,
            allow_errors=True,
            resources={"metadata": {"path": str(cwd or Path.cwd())}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return [CellRun(c.source, c.outputs) for c in nb.cells]


def keep_gpu_file(name: str, data: object) -> object:
    """Write ``data`` (as JSON) where a GPU run's files are kept (``NBGPUMON_GPU_OUT``: the
    device's ``$OUT``, for docs/benchmarks.md; else /tmp) and return it."""
    (Path(os.environ.get("NBGPUMON_GPU_OUT", "/tmp")) / name).write_text(json.dumps(data, indent=1))
    return data


def keep_gpu_cells(name: str, runs: list[CellRun]) -> list[CellRun]:
    """:func:`keep_gpu_file` of each cell's source and text."""
    keep_gpu_file(name, [{"source": r.source, "text": r.text} for r in runs])
    return runs


def fake_nvml_env(**machine) -> dict[str, str]:
    """Environment that makes a kernel import the fake pynvml describing ``machine``."""
    path = os.pathsep.join([str(FAKE_NVML_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return {"PYTHONPATH": path, "NBGPUMON_FAKE_NVML": json.dumps(machine)}


_fake_names = itertools.count()


def fake_pynvml(**machine) -> ModuleType:
    """A fresh copy of the fake ``pynvml`` module describing ``machine``, for a Monitor in this
    process (``Monitor(nvml_module=...)``)."""
    spec = importlib.util.spec_from_file_location(
        f"fake_pynvml_{next(_fake_names)}", FAKE_NVML_DIR / "pynvml.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.configure(machine)
    return module
