"""Building from source on a machine without npm: one line says what to install, and a source
tree that has the built bundle still builds without npm; so does the sdist, which carries the
bundle, and pip installs it with no npm.

Each build is of a copy of this checkout (its files git does not ignore, so no bundle and no
node_modules) with a PATH that has no npm, and no build isolation (the build's requirements
are in the test extra). What is acceptable when it fails: pip's own lines around the build's
output, and that output exactly our one line, with no traceback anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = "nbgpumon/static/widget.js"
A_BUILT_BUNDLE = "export default {}; // a built bundle\n"

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


def _without_npm(command: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    empty = tmp_path / "bin"  # PATH: no npm, no node
    empty.mkdir(exist_ok=True)
    return subprocess.run(
        command, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True,
        timeout=300, cwd=tmp_path,
    )  # fmt: skip


def _wheel_without_npm(source: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return _without_npm(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp_path / "out"), str(source)],
        tmp_path,
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
    (source / BUNDLE).write_text(A_BUILT_BUNDLE)
    done = _wheel_without_npm(source, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (tmp_path / "out").glob("nbgpumon-*.whl")
    with zipfile.ZipFile(built) as wheel:
        assert wheel.read(BUNDLE) == (source / BUNDLE).read_bytes()


def test_without_npm_or_a_built_bundle_the_sdist_build_says_what_to_install(tmp_path):
    source = _source_copy(tmp_path / "src")
    done = _without_npm(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation",
         "--outdir", str(tmp_path / "out"), str(source)],
        tmp_path,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "nbgpumon: building the widget's front end needs Node.js >= 20 with npm" in said, said
    assert "Traceback" not in said and "Could not find cmd" not in said, said
    assert not list((tmp_path / "out").glob("*.tar.gz"))


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build --sdist`` with no npm, of a source tree where npm ran: the built
    bundle and js/node_modules beside the sources."""
    tmp_path = tmp_path_factory.mktemp("sdist")
    source = _source_copy(tmp_path / "src")
    (source / BUNDLE).parent.mkdir(parents=True)
    (source / BUNDLE).write_text(A_BUILT_BUNDLE)
    (source / "js/node_modules/uplot").mkdir(parents=True)
    (source / "js/node_modules/uplot/package.json").write_text("{}\n")
    done = _without_npm(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation",
         "--outdir", str(tmp_path / "out"), str(source)],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (tmp_path / "out").glob("nbgpumon-*.tar.gz")
    return built


def test_the_sdist_carries_the_built_bundle_and_no_node_modules(sdist):
    with tarfile.open(sdist) as tar:
        files = {name.partition("/")[2]: name for name in tar.getnames()}  # under nbgpumon-0.1.0/
        assert BUNDLE in files, sorted(files)
        assert tar.extractfile(files[BUNDLE]).read().decode() == A_BUILT_BUNDLE
    assert "js/package.json" in files and "js/src/widget.js" in files  # its sources too
    assert not [name for name in files if "node_modules" in name]


def test_pip_installs_the_sdist_without_npm_and_nbgpumon_reads_its_bundle(sdist, tmp_path):
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True)
    python = str(fresh / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # The dependencies, pip and the build backend come from this environment, after the
    # fresh one's own site-packages (no network here); nbgpumon itself only from the sdist.
    Path(site, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = _without_npm(
        [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--ignore-installed", str(sdist)],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    read = _without_npm(
        [python, "-c", "import nbgpumon, nbgpumon._views.widget.live_chart as w; "
         "print(nbgpumon.__file__); print(w.BUNDLE.read_text(), end='')"],
        tmp_path,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    where, bundle = read.stdout.split("\n", 1)
    assert Path(where).is_relative_to(Path(site)), where
    assert bundle == A_BUILT_BUNDLE
