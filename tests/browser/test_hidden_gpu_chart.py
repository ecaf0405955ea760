"""The live chart in a real JupyterLab with two GPUs faked at NVML's boundary and
``CUDA_VISIBLE_DEVICES=1``: each GPU's panels and its entry in the GPU selector name it by NVML's
index plus the kernel's view of it, ``cuda:0`` for GPU 1, "not visible to this kernel" for GPU 0,
the words the text views use."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

FAKE_NVML = Path(__file__).resolve().parent.parent / "fake_nvml"
SETUP = (
    "import json, os, sys\n"
    f"sys.path.insert(0, {str(FAKE_NVML)!r})\n"
    "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
    "os.environ['NBGPUMON_FAKE_NVML'] = json.dumps({'devices': ["
    "{'name': 'Fake A', 'uuid': 'GPU-aaaa', 'used': 3 * 2**30, 'total': 80 * 2**30},"
    "{'name': 'Fake B', 'uuid': 'GPU-bbbb', 'used': 5 * 2**30, 'total': 80 * 2**30}]})"
)


@pytest.fixture
def jupyter(lab_server):
    """JupyterLab only (the widget is the same in Notebook 7: test_widget.py shows both)."""
    return lab_server


def test_a_gpu_hidden_from_the_kernel_is_named_so_in_its_panels_and_the_gpu_selector(
    page, open_notebook
):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    nb = open_notebook([SETUP, "%load_ext nbgpumon", "%gpumon"])
    for i in range(3):
        nb.run_cell(i)
    widget = nb.in_output(2, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    select = nb.in_output(2, ".nbgpumon-gpu")
    expect(select.locator("option")).to_have_text(
        ["all GPUs", "GPU 0: Fake A (not visible to this kernel)", "GPU 1: Fake B (cuda:0)"]
    )
    select.select_option("all")
    title = '[data-panel="{}"] .nbgpumon-panel-title'
    expect(nb.in_output(2, title.format("gpu0-memory"))).to_have_text(
        "GPU 0 memory (not visible to this kernel)"
    )
    expect(nb.in_output(2, title.format("gpu1-memory"))).to_have_text("GPU 1 memory (cuda:0)")
    status = nb.in_output(2, ".nbgpumon-status")
    expect(status).to_contain_text("gpu0 not visible to this kernel")
    nb.screenshot("widget_hidden_gpu")
    page.record.assert_clean()
