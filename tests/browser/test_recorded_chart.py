"""A recording opens in the live chart, in a real JupyterLab 4 and Notebook 7: the H200
training run of tests/data draws its GPU memory and utilization panels, its cell bands and its
table, as the live session would have. The Lab screenshots are the README's and the guide's
pictures docs/widget.png and docs/frameworks.png (scripts/pictures widget frameworks)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from notebook_page import ARTIFACTS
from pictures import save_picture

pytestmark = pytest.mark.browser

RECORDING = Path(__file__).resolve().parents[1] / "data" / "recorded-v1-h200.sqlite"
WIDE = {"width": 1280, "height": 1100}


def _beside_the_notebook(jupyter, recording: Path) -> str:
    """A copy of ``recording`` in the server's root, where the kernel starts: the chart's status
    line (and so the picture) names it as a user's would, not by this checkout's path."""
    shutil.copy(recording, jupyter.root_dir / recording.name)
    return recording.name


def test_a_recorded_training_run_opens_in_the_live_chart(page, open_notebook, jupyter):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    page.set_viewport_size(WIDE)
    path = _beside_the_notebook(jupyter, RECORDING)
    nb = open_notebook([f"import nbgpumon\nsession = nbgpumon.load({path!r})\nsession.widget()"])
    nb.run_cell(0)
    widget = nb.in_output(0, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    panels = widget.locator("[data-panel]")
    expect(panels).to_have_count(2, timeout=30_000)
    assert [p.get_attribute("data-panel") for p in panels.all()] == ["gpu0-memory", "gpu0-util"]
    expect(widget.locator(".nbgpumon-status")).to_contain_text(
        re.compile(r"^recorded: .*recorded-v1-h200\.sqlite \(session 1\), 308 samples")
    )
    nb.wait_until(lambda: int(widget.get_attribute("data-points") or 0) == 308, what="308 rows")
    # the whole run is in view, with its 13 records in the table (the three epochs too)
    widget.locator("button[data-window='all']").click()
    rows = widget.locator(".nbgpumon-table tbody tr")
    expect(rows).to_have_count(13, timeout=15_000)
    expect(widget.locator(".nbgpumon-table")).to_contain_text("[6] epoch 2")
    expect(widget.locator(".nbgpumon-table")).to_contain_text("oom")
    legend = widget.locator("[data-panel='gpu0-memory']")
    expect(legend).to_contain_text("used (NVML)")
    expect(legend).to_contain_text("allocated")
    widget.scroll_into_view_if_needed()
    nb.screenshot(f"recorded_chart_{nb.server.kind}")
    widget.screenshot(path=str(ARTIFACTS / f"recorded_chart_widget_{nb.server.kind}.png"))
    if nb.server.kind == "lab":
        save_picture(widget, "widget")


FRAMEWORKS = RECORDING.parent / "recorded-frameworks-h200.sqlite"


def test_torch_jax_and_cupy_recorded_on_an_h200_each_draw_their_own_lines(
    page, open_notebook, jupyter
):
    # notebooks/frameworks.ipynb run on the H200: torch, then JAX, then CuPy, then %gpumon free
    from playwright.sync_api import expect

    page.set_viewport_size(WIDE)
    path = _beside_the_notebook(jupyter, FRAMEWORKS)
    nb = open_notebook([f"import nbgpumon\nsession = nbgpumon.load({path!r})\nsession.widget()"])
    nb.run_cell(0)
    widget = nb.in_output(0, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    nb.wait_until(lambda: int(widget.get_attribute("data-points") or 0) == 168, what="168 rows")
    widget.locator("button[data-window='all']").click()
    memory = widget.locator("[data-panel='gpu0-memory']")
    for line in ("used (NVML)", "reserved", "allocated", "pool (JAX)", "in use (JAX)",
                 "pool (CuPy)", "in use (CuPy)"):  # fmt: skip
        expect(memory).to_contain_text(line)
    table = widget.locator(".nbgpumon-table")
    expect(table.locator("tbody tr")).to_have_count(8, timeout=15_000)
    rows = {r.locator("td").first.inner_text(): r for r in table.locator("tbody tr").all()}
    expect(rows["[5]"]).to_contain_text("JAX 5.1 GiB")  # a new high: exact
    expect(rows["[6]"]).to_contain_text("CuPy \u22655.0 GiB")  # CuPy keeps no peak: sampled
    expect(rows["[6]"]).to_contain_text("c 1.0 GiB")
    widget.scroll_into_view_if_needed()
    nb.screenshot(f"frameworks_chart_{nb.server.kind}")
    widget.screenshot(path=str(ARTIFACTS / f"frameworks_chart_widget_{nb.server.kind}.png"))
    if nb.server.kind == "lab":
        save_picture(widget, "frameworks")


BY_KIND = """\
import dataclasses, nbgpumon
session = nbgpumon.load({path!r})
def by_kind(r):  # the recording is of schema 1: each cell's end given kinds here
    devices = []
    for d in r.devices:
        a = d.allocated_after or 0
        kinds = (("parameters", a // 4), ("gradients", a // 4), ("optimizer state", a - a // 2))
        devices.append(dataclasses.replace(d, kinds_after=kinds) if a > 0 else d)
    return dataclasses.replace(r, devices=tuple(devices))
session = dataclasses.replace(session, records=[by_kind(r) for r in session.records])
session.widget()"""


def test_the_by_kind_toggle_stacks_each_cells_memory_in_its_band(page, open_notebook, jupyter):
    """The toggle draws each cell's memory by kind (its end's, the rest of its peak on top)
    in the memory panel, with the legend, and turns off again (Lab: the picture is looked at)."""
    from playwright.sync_api import expect

    page.set_viewport_size(WIDE)
    path = _beside_the_notebook(jupyter, RECORDING)
    nb = open_notebook([BY_KIND.format(path=path)])
    nb.run_cell(0)
    widget = nb.in_output(0, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    nb.wait_until(lambda: int(widget.get_attribute("data-points") or 0) == 308, what="308 rows")
    widget.locator("button[data-window='all']").click()
    memory = widget.locator("[data-panel='gpu0-memory']")
    legend = widget.locator(".nbgpumon-kinds-legend")
    expect(legend).to_be_hidden()
    widget.locator("input[data-toggle='kinds']").check()
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("activations and temporaries")
    expect(memory).to_have_attribute("data-kinds-drawn", re.compile(r"^[1-9]\d*$"), timeout=15_000)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(ARTIFACTS / f"by_kind_widget_{nb.server.kind}.png"))
    widget.locator("input[data-toggle='kinds']").uncheck()
    expect(legend).to_be_hidden()
    expect(memory).to_have_attribute("data-kinds-drawn", "0", timeout=15_000)
