"""The deprecated ``pynvml`` distribution, when it ships the module, is named in status."""

import sys

from nbgpumon._sources.devices.nvml.library import shadowing_note


def _install_fake_distribution(root, files: list[str]) -> None:
    info = root / "pynvml-11.5.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pynvml\nVersion: 11.5.0\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


def test_a_pynvml_distribution_that_ships_the_module_is_reported(tmp_path, monkeypatch):
    _install_fake_distribution(tmp_path, ["pynvml.py", "pynvml-11.5.0.dist-info/METADATA"])
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    note = shadowing_note()
    assert note is not None and "pip uninstall pynvml" in note


def test_the_new_pynvml_shim_without_the_module_is_not_reported(tmp_path, monkeypatch):
    _install_fake_distribution(tmp_path, ["pynvml_utils/__init__.py"])
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert shadowing_note() is None


def test_without_pynvml_installed_nothing_is_reported():
    assert shadowing_note() is None
