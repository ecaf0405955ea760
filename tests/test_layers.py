"""The import contracts in pyproject.toml hold, and they are not vacuous: a copy of the package
with one wrong import breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--no-cache", str(root / "pyproject.toml")],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def package_copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "nbgpumon", tmp_path / "nbgpumon", ignore=shutil.ignore_patterns("static")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_layers():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("_sources/host.py", "from .._views.words import snapshot", "Layers import downward only"),
        ("_ledger/records.py", "from . import ledger", "No import cycles"),
        ("_session/session.py", "import IPython", "Only _ipython imports IPython"),
        ("_views/chart/svg.py", "from ..._sources.devices import nvml", "Views read a session"),
        (
            "_views/widget/live_chart.py",
            "from ..._sampling import timeline",
            "Views read a session",
        ),
        (
            "_sources/frameworks/jax/allocator.py",
            "from ..cupy import allocator",
            "Framework plug-ins are independent",
        ),
        (
            "_ledger/outcome.py",
            "from .._sources.frameworks.cupy import peaks",
            "Only the frameworks registry imports a plug-in",
        ),
        (
            "_sources/allocator_columns.py",
            "from .frameworks.torch import allocator",
            "Only the frameworks registry imports a plug-in",
        ),
        (
            "_session/session.py",
            "from .._sources.devices.nvml import NvmlSource",
            "Only the devices registry imports a device plug-in",
        ),
        (
            "_ledger/ledger.py",
            "from .._sources.devices.nvml.library import NvmlLibrary",
            "Only the devices registry imports a device plug-in",
        ),
        (
            "_sources/processes/source.py",
            "from ..devices.nvml import source",
            "Only the devices registry imports a device plug-in",
        ),
        (
            "_sources/devices/protocol.py",
            "from ..frameworks import frameworks",
            "Devices are independent of frameworks",
        ),
        (
            "_sources/frameworks/plugin.py",
            "from ..devices.protocol import GpuDevice",
            "Devices are independent of frameworks",
        ),
        (
            "_session/controls/cluster.py",
            "from ..._foundation.wording import counted",
            "Only views make words",
        ),
    ],
)
def test_a_wrong_import_breaks_a_contract(tmp_path, module, line, broken):
    root = package_copy(tmp_path)
    path = root / "nbgpumon" / module
    path.write_text(path.read_text() + f"\n\ndef _wrong():\n    {line}\n")  # inside a function
    done = lint(root)
    assert done.returncode != 0, done.stdout[-3000:]
    # ("… BROKEN", or "… BROKEN (N ignored imports)" for a contract with exceptions)
    assert any(ln.startswith(broken) and " BROKEN" in ln for ln in done.stdout.splitlines())
