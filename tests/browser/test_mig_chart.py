"""The live chart in a real JupyterLab with a kernel on a MIG device, faked at NVML's boundary
(an H200 in MIG mode, two GPU instances, ``CUDA_VISIBLE_DEVICES=MIG-<uuid>``): its panels are
titled by the GPU's index and the MIG device's profile, its memory ceiling is the instance's,
and utilization, which NVML cannot give on a MIG device, gets no panel; the status line says
so."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

FAKE_NVML = Path(__file__).resolve().parent.parent / "fake_nvml"
MIG_1 = "MIG-11111111-2222-5333-8444-555555555555"
SETUP = (
    "import json, os, sys\n"
    f"sys.path.insert(0, {str(FAKE_NVML)!r})\n"
    f"os.environ['CUDA_VISIBLE_DEVICES'] = {MIG_1!r}\n"
    "os.environ['NBGPUMON_FAKE_NVML'] = json.dumps({'devices': [{"
    "'name': 'NVIDIA H200', 'uuid': 'GPU-aaaa', 'total': 150754820096, 'used': 9 * 2**30,"
    f"'mig': [{{'uuid': {MIG_1!r}, 'gpu_instance': 1, 'profile': '1g.18gb',"
    "'total': 17716740096, 'used': 4 * 2**30},"
    "{'uuid': 'MIG-2222', 'gpu_instance': 2, 'profile': '3g.71gb', 'total': 76235669504}]}]})"
)
# The chart draws its memory ceiling on the canvas, as "total <bytes>" over a dashed line:
# each panel keeps the texts drawn on its canvases from now on (a wrapper round fillText).
KEEP_DRAWN_TEXTS = """() => {
  const proto = CanvasRenderingContext2D.prototype;
  if (proto.nbgpumonFillText) return;
  proto.nbgpumonFillText = proto.fillText;
  proto.fillText = function (text, ...rest) {
    const panel = this.canvas.closest("[data-panel]");
    if (panel) (panel.nbgpumonDrawn ??= new Set()).add(String(text));
    return this.nbgpumonFillText(text, ...rest);
  };
}"""
CEILING_DRAWN = """el => [...(el.nbgpumonDrawn ?? [])].some((t) => t.startsWith("total "))"""


@pytest.fixture
def jupyter(lab_server):
    """JupyterLab only (the widget is the same in Notebook 7: test_widget.py shows both)."""
    return lab_server


def test_a_mig_device_s_panels_name_its_profile_and_utilization_is_not_drawn(page, open_notebook):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    nb = open_notebook([SETUP, "%load_ext nbgpumon", "%gpumon"])
    for i in range(3):
        nb.run_cell(i)
    widget = nb.in_output(2, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    page.evaluate(KEEP_DRAWN_TEXTS)  # the chart redraws with each new row: it draws them again
    title = '[data-panel="{}"] .nbgpumon-panel-title'
    expect(nb.in_output(2, title.format("gpu0-memory"))).to_have_text(
        "GPU 0 MIG 1g.18gb memory (cuda:0)"
    )
    # NVML answered NotSupported for it on the first tick: the status line says so, and the
    # devices sent with that line (the same update) leave its panel out
    status = nb.in_output(2, ".nbgpumon-status")
    expect(status).to_contain_text("MIG device gpu0-mig1 (1g.18gb)")
    expect(status).to_contain_text("unavailable: gpu0-mig1 utilization")
    expect(nb.in_output(2, '[data-panel="gpu0-util"]')).to_have_count(0)
    expect(nb.in_output(2, '[data-panel="gpu0-memory"] .nbgpumon-panel-head')).to_contain_text(
        "used (NVML)"
    )
    # its memory ceiling is the MIG device's 16.5 GiB (17,716,740,096 bytes), not the H200's
    memory = nb.in_output(2, '[data-panel="gpu0-memory"]').first
    page.wait_for_function(CEILING_DRAWN, arg=memory.element_handle(), timeout=30_000)
    ceilings = [t for t in memory.evaluate("el => [...el.nbgpumonDrawn]") if t.startswith("total ")]
    assert set(ceilings) == {"total 16.5 GiB"}, ceilings
    nb.screenshot("widget_mig")
    page.record.assert_clean()
