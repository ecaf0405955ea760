"""The live chart's memory panel with a child process on the GPU, in a real JupyterLab: this
kernel, its children and the other processes are lines of their own, each with its latest
figure. The kernel's GPU is faked at NVML's boundary (tests/fake_nvml); the child is a real
process that says what it holds (tests/children/holder.py), as the fake NVML lists it. The
memory panel's picture is docs/children.png (scripts/pictures children)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pictures import save_picture

pytestmark = pytest.mark.browser

TESTS = Path(__file__).resolve().parent.parent
FAKE_NVML = TESTS / "fake_nvml"
HOLDER = TESTS / "children" / "holder.py"
GIB = 2**30


@pytest.fixture
def jupyter(lab_server):
    """JupyterLab only (the chart is the same in Notebook 7: test_widget.py shows both)."""
    return lab_server


def test_the_memory_panel_shows_the_kernel_its_children_and_the_others_apart(
    page, open_notebook, tmp_path
):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    use = tmp_path / "gpu-use"
    use.mkdir()
    machine = {
        "devices": [{"name": "Fake H100", "used": 6 * GIB, "total": 8 * GIB, "util": 40}],
        "processes": [
            {"pid": "self", "used": 2 * GIB},
            {"pid": 1, "used": GIB},  # another process
            {"pid": "descendants", "used_from": str(use)},
        ],
    }
    setup = (
        "import json, os, subprocess, sys\n"
        f"sys.path.insert(0, {str(FAKE_NVML)!r})\n"
        f"os.environ['NBGPUMON_FAKE_NVML'] = {json.dumps(machine)!r}\n"
        f"os.environ['GPU_USE'] = {str(use)!r}"
    )
    start_child = (
        f"child = subprocess.Popen([{sys.executable!r}, {str(HOLDER)!r}, str({3 * GIB}), "
        "'50', '120'])"
    )
    cells = [setup, "%load_ext nbgpumon", "%gpumon", start_child, "child.kill(); child.wait()"]
    nb = open_notebook(cells)
    try:
        for i in range(4):
            nb.run_cell(i)
        memory = nb.in_output(2, '[data-panel="gpu0-memory"]')
        expect(memory).to_be_visible()
        labels = memory.locator(".u-legend .u-series .u-label")
        expect(labels).to_contain_text(["this kernel", "its children", "other processes"])
        names = [t.strip() for t in labels.all_text_contents()]
        values = memory.locator(".u-legend .u-series .u-value")

        def value_of(name: str):
            return values.nth(names.index(name))

        # the child's 3 GiB once the process cadence has listed it (a condition, not a sleep)
        expect(value_of("its children")).to_have_text("3.0 GiB", timeout=30_000)
        expect(value_of("this kernel")).to_have_text("2.0 GiB")
        expect(value_of("other processes")).to_have_text("1.0 GiB")
        memory.evaluate("(el) => el.scrollIntoView({block: 'start'})")
        nb.screenshot("children_chart_lab")
        save_picture(memory, "children")
        page.record.assert_clean()
    finally:
        nb.run_cell(4)
