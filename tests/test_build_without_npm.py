"""Building from source on a machine without npm: one line says what to install, and a source
tree that has the built bundle still builds without npm.

Each build is ``pip wheel`` of a copy of this checkout (its files git does not ignore, so no
bundle and no node_modules) with a PATH that has no npm, and no build isolation (the build's
requirements are in the test extra). What is acceptable when it fails: pip's own lines around
the build's output, and that output exactly our one line, with no traceback anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = "nbgpumon/static/widget.js"

pytest.importorskip("hatch_jupyter_builder")


def _source_copy(to: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # (a file deleted but not yet committed is listed too)
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    assert not (to / BUNDLE).exists() and (to / "pyproject.toml").is_file()
    return to


def _wheel_without_npm(source: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    empty = tmp_path / "bin"  # PATH: no npm, no node
    empty.mkdir()
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp_path / "out"), str(source)],
        env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True, timeout=300,
        cwd=tmp_path,
    )  # fmt: skip


def _build_output(text: str) -> list[str]:
    """The lines the build itself printed, between pip's "[N lines of output]" and "[end of
    output]"."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "lines of output]" in line)
    end = next(i for i, line in enumerate(lines) if "[end of output]" in line)
    return [line.strip() for line in lines[start + 1 : end]]


def test_without_npm_the_build_says_what_to_install_in_one_line(tmp_path):
    source = _source_copy(tmp_path / "src")
    done = _wheel_without_npm(source, tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "[1 lines of output]" in said, said
    assert _build_output(said) == [
        "nbgpumon: building the widget's front end needs Node.js >= 20 with npm, and npm is not "
        "on PATH: install them (apt-get install nodejs npm, or from nodejs.org), or install a "
        "wheel built where they are (pip wheel . --no-deps -w dist/)"
    ], said
    assert "Traceback" not in said and "Could not find cmd" not in said, said
    assert not list((tmp_path / "out").glob("*.whl"))


def test_a_source_tree_with_the_built_bundle_builds_without_npm(tmp_path):
    source = _source_copy(tmp_path / "src")
    (source / BUNDLE).parent.mkdir(parents=True)
    (source / BUNDLE).write_text("export default {}; // a built bundle\n")
    done = _wheel_without_npm(source, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (tmp_path / "out").glob("nbgpumon-*.whl")
    with zipfile.ZipFile(built) as wheel:
        assert wheel.read(BUNDLE) == (source / BUNDLE).read_bytes()
