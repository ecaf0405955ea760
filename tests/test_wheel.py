"""The wheel a user installs: the widget's bundle and the license in it, and the guide's list
of dependencies (docs/getting-started.md, Install) true to it."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
        check=True, timeout=600,
    )  # fmt: skip
    (built,) = out.glob("nbgpumon-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_ships_the_bundle_and_the_license(wheel):
    names = set(wheel.namelist())
    assert "nbgpumon/static/widget.js" in names
    licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert licenses, sorted(names)
    assert wheel.read(licenses[0]) == (ROOT / "LICENSE").read_bytes()


def test_the_install_guide_names_every_runtime_dependency(wheel):
    metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    required = [
        re.split(r"[<>=!~;\s]", line.split(":", 1)[1].strip(), maxsplit=1)[0]
        for line in wheel.read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    install = guide.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert len(required) >= 10
    missing = [name for name in required if name.lower() not in install.lower()]
    assert not missing, f"the guide's Install section does not name {missing}"
