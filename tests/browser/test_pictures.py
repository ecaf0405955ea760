"""The quickstart notebook, run top to bottom in a real JupyterLab 4, is the guide's picture of
the first steps (docs/quickstart.png, written by ``scripts/pictures quickstart``).

This machine has no GPU: the kernel's NVML is the tests' fake at the library boundary
(tests/fake_nvml, on the server's and so the kernel's PYTHONPATH), one "Fake H200"; host memory,
torch (its CPU build) and everything nbgpumon does with them are real."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from pictures import save_picture
from servers import remove_tree, start_server

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
FAKE_NVML = ROOT / "tests" / "fake_nvml"
# An H200's memory, half a GiB used by others, idle: the one GPU nbgpumon finds here.
MACHINE = {"devices": [{"name": "Fake H200", "total": 150754820096, "used": 2**29, "util": 0}]}
TALL = {"width": 1400, "height": 2800}


@pytest.fixture(scope="module")
def jupyter():
    """A JupyterLab whose kernels import the fake NVML (so the notebook runs as it is)."""
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "NBGPUMON_FAKE_NVML")}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(FAKE_NVML), saved["PYTHONPATH"]) if p
    )
    os.environ["NBGPUMON_FAKE_NVML"] = json.dumps(MACHINE)
    try:
        server = start_server("lab")  # its environment is copied from os.environ now
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        yield server
    finally:
        server.stop()
        remove_tree(server.base_dir)


def _quickstart_cells() -> list[str | tuple[str, str]]:
    nb = nbformat.read(QUICKSTART, as_version=4)
    return [(c.cell_type, c.source) for c in nb.cells]


def test_the_quickstart_notebook_runs_in_jupyterlab_and_is_the_guide_s_picture(page, open_notebook):
    from playwright.sync_api import expect

    page.set_viewport_size(TALL)
    cells = _quickstart_cells()
    nb = open_notebook(cells, name="quickstart.ipynb")
    # the notebook the whole width: the file browser's side panel closed
    page.evaluate(
        """() => { const app = window.jupyterapp;
            if (!app.shell.leftCollapsed) app.commands.execute('application:toggle-left-area'); }"""
    )
    page.wait_for_function("() => window.jupyterapp.shell.leftCollapsed")
    source = [text for _, text in cells]
    index = {text.splitlines()[0]: i for i, text in enumerate(source) if text}
    status, ledger = index["%gpumon status"], index["%gpumon cells 10"]
    # every cell on the page before Run All (a notebook being laid out has only its first)
    nb.wait_until(lambda: nb.cells.count() == len(cells), what=f"{len(cells)} cells on the page")
    nb.run_all(timeout=180_000)

    load = index["%load_ext nbgpumon"]
    expect(nb.outputs(load)).to_contain_text(re.compile(r"nbgpumon 0\.1\.0: watching 1 GPU.*"))
    expect(nb.outputs(load)).to_contain_text("Fake H200")
    expect(nb.outputs(status)).to_contain_text("Fake H200")
    expect(nb.outputs(status)).to_contain_text("sampler")
    kept = index["kept = np.ones(64 * 2**20 // 8)  # 64 MiB that this cell keeps"]
    expect(nb.outputs(kept)).to_contain_text(re.compile(r"^\[\d+\] host \+6\d\.\d MiB"))
    table = nb.outputs(ledger)
    for epoch in range(3):
        expect(table).to_contain_text(f"epoch {epoch}")
    expect(table).to_contain_text("held by")
    # every code cell ran, none failed
    assert not nb.panel.locator(".jp-OutputArea-output[data-mime-type*='error']").count()
    assert "Traceback" not in nb.panel.inner_text()
    page.record.assert_clean()

    # the picture: from the notebook's top to the ledger's table
    nb.notebook.evaluate("(el) => el.scrollTo(0, 0)")
    nb.cell(0).scroll_into_view_if_needed()
    top = nb.cell(0).bounding_box()
    bottom = nb.cell(ledger).bounding_box()
    assert top and bottom and bottom["y"] + bottom["height"] <= TALL["height"], (top, bottom)
    clip = {
        "x": top["x"],
        "y": top["y"],
        "width": top["width"],
        "height": bottom["y"] + bottom["height"] - top["y"] + 8,
    }
    nb.screenshot("quickstart_in_jupyterlab")
    save_picture(page, "quickstart", clip=clip)
