"""Installing nbgpumon into Colab's runtime changes none of Colab's packages.

Colab breaks, or asks for a restart, when an install upgrades what it ships: IPython above all
(colabtools#2837). This runs the README's one install line for Colab (``pip install`` of the
built wheel, with no options) in the Colab leg's runtime (scripts/legs/colab: Colab's pins and
pip freeze, scripts/legs/colab-pip-freeze.txt, with nbgpumon's dependencies at the versions
Colab has), and compares every installed distribution before and after.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_runner import COLAB_RUNTIME

pytestmark = pytest.mark.skipif(
    not COLAB_RUNTIME,
    reason="checks Colab's runtime (google.colab and Colab's pins): scripts/legs/colab runs it",
)

ROOT = Path(__file__).resolve().parent.parent
COLAB_FREEZE = ROOT / "scripts" / "legs" / "colab-pip-freeze.txt"


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _installed() -> dict[str, str]:
    listed = json.loads(_pip("list", "--format=json", "--disable-pip-version-check"))
    return {_name(d["name"]): d["version"] for d in listed}


def _colab_versions() -> dict[str, str]:
    pins = (line.split("#", 1)[0].strip() for line in COLAB_FREEZE.read_text().splitlines())
    return {_name(name): version for name, _, version in (p.partition("==") for p in pins if p)}


def test_installing_the_wheel_the_readme_way_changes_none_of_colabs_packages(tmp_path):
    wheels = tmp_path / "dist"
    _pip("wheel", str(ROOT), "--no-deps", "-q", "-w", str(wheels))
    (wheel,) = wheels.glob("nbgpumon-*.whl")
    if "nbgpumon" in _installed():  # an earlier run of the leg: start from Colab's runtime
        _pip("uninstall", "-y", "nbgpumon")
    before = _installed()
    colab = _colab_versions()
    assert before["ipython"] == colab["ipython"] == "7.34.0"  # the runtime is Colab's
    assert before["ipykernel"] == colab["ipykernel"] == "6.17.1"

    said = _pip("install", str(wheel))  # the README's line, a local path for its URL

    after = _installed()
    assert after.pop("nbgpumon") == wheel.name.split("-")[1], said
    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    assert changed == {}, f"the install changed (before, after) {changed}\n{said}"
    # and what it added is, where Colab has it, Colab's version (Colab would keep its own)
    unlike_colab = {n: (colab[n], v) for n, v in after.items() if n in colab and colab[n] != v}
    assert unlike_colab == {}, f"not Colab's version (Colab's, here) {unlike_colab}\n{said}"
