"""The live widget's cluster view in a real JupyterLab: other nodes' GPUs, fed through the
session's node timeline (what the Prometheus source fills), show up behind a host selector, as
one host's panels and GPU list, as every node's panels, and as summary rows beyond 8 nodes.

The kernel's GPU is faked at NVML's boundary (tests/fake_nvml); the nodes' answers are
``NodeReading``s added from a cell, as the sampler adds the cluster source's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notebook_page import requests_for_xss

pytestmark = pytest.mark.browser

FAKE_NVML = Path(__file__).resolve().parent.parent / "fake_nvml"
XSS = "<img src=x onerror=alert(1)>"
GIB = 2**30

SETUP = (
    "import json, os, sys\n"
    f"sys.path.insert(0, {str(FAKE_NVML)!r})\n"
    "os.environ['NBGPUMON_FAKE_NVML'] = json.dumps({'devices': [{'name': 'Fake H100', "
    "'used': 3 * 2**30, 'total': 80 * 2**30, 'util': 40}]})"
)
# Answers from `hosts`: host k's GPUs (node-01's GPU 0 split into two MIG instances) use
# k + j + 1 GiB (j: the GPU's place on its host) and are 5 (k + 1) + j % busy; a pod named
# like markup on the first host's GPU 1. Two answers, 15 s apart, the second now.
FEED = f"""
import time, nbgpumon
from nbgpumon._sources.base import NodeReading
GIB = 2**30
def feed(count):
    hosts = [f"gpu-node-{{k + 1:02d}}" for k in range(count)]
    values, gpus = {{}}, {{}}
    for k, host in enumerate(hosts):
        names = ["gpu0-mig1", "gpu0-mig2", "gpu1"] if k == 0 else ["gpu0", "gpu1"]
        for j, gpu in enumerate(names):
            mig = "-mig" in gpu
            values[f"node:{{host}}.{{gpu}}.mem_used"] = (k + j + 1) * GIB
            values[f"node:{{host}}.{{gpu}}.mem_total"] = (40 if mig else 80) * GIB
            values[f"node:{{host}}.{{gpu}}.gpu_util"] = 5 * (k + 1) + j
            gpus[(host, gpu)] = {{
                "model": "NVIDIA A100-SXM4-80GB", "origin": "dcgm",
                "mig_profile": "3g.40gb" if mig else "",
                "pod": {XSS!r} if (k, gpu) == (0, "gpu1") else "",
                "namespace": "ml" if (k, gpu) == (0, "gpu1") else "",
            }}
    nodes = nbgpumon.monitor()._session.node_timeline()
    now = time.time()
    for t in (now - 15, now):
        nodes.add(NodeReading(t, values, gpus))
"""


@pytest.fixture
def jupyter(lab_server):
    """JupyterLab only (the widget is the same in Notebook 7: test_widget.py shows both)."""
    return lab_server


def _panel(nb, cell: int, panel: str):
    return nb.in_output(cell, f'.nbgpumon-nodes [data-panel="{panel}"]')


def _to_top(locator) -> None:
    """Scroll the notebook so that ``locator``'s element starts at the top (screenshots)."""
    locator.evaluate("(el) => el.scrollIntoView({block: 'start'})")


def _legend(panel) -> list[str]:
    """The series a panel's legend names (its first entry is the time)."""
    labels = panel.locator(".u-legend .u-series .u-label").all_text_contents()
    return [t.strip() for t in labels][1:]


def test_other_nodes_show_behind_a_host_selector(page, open_notebook):
    from playwright.sync_api import expect  # lazily: without Playwright, conftest skips

    xss_requests = requests_for_xss(page)
    nb = open_notebook([SETUP, "%load_ext nbgpumon", "%gpumon", FEED, "feed(3)", "feed(12)"])
    for i in range(4):
        nb.run_cell(i)
    widget = nb.in_output(2, ".nbgpumon-widget").first
    widget.wait_for(state="visible", timeout=30_000)
    host = nb.in_output(2, ".nbgpumon-host")
    expect(host).to_be_hidden()  # no other node has answered yet
    expect(nb.in_output(2, '[data-panel="gpu0-memory"]')).to_be_visible()

    nb.run_cell(4)  # three nodes answer
    select = nb.in_output(2, ".nbgpumon-host-select")
    hosts = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    expect(select.locator("option")).to_have_text(["this kernel", "all nodes", *hosts])
    expect(host).to_contain_text("node")
    expect(select).to_have_value("local")  # this kernel's panels until a node is chosen
    expect(nb.in_output(2, '[data-panel="gpu0-memory"]')).to_be_visible()

    # one host: a line per GPU (MIG instances their own), the newest numbers, its GPU list
    select.select_option("host:gpu-node-01")
    memory = _panel(nb, 2, "node:gpu-node-01:memory")
    util = _panel(nb, 2, "node:gpu-node-01:util")
    expect(memory).to_be_visible()
    expect(util).to_be_visible()
    expect(nb.in_output(2, '[data-panel="gpu0-memory"]')).to_be_hidden()
    assert _legend(memory) == ["GPU 0 MIG 1", "GPU 0 MIG 2", "GPU 1"]
    assert _legend(util) == ["GPU 0 MIG 1", "GPU 0 MIG 2", "GPU 1"]
    expect(memory.locator(".u-legend .u-value")).to_have_text(
        ["latest", "1.0 GiB", "2.0 GiB", "3.0 GiB"]
    )
    expect(util.locator(".u-legend .u-value")).to_have_text(["latest", "5%", "6%", "7%"])
    rows = nb.in_output(2, ".nbgpumon-gpus tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator("td")).to_have_text(
        ["GPU 0 MIG 1", "NVIDIA A100-SXM4-80GB 3g.40gb", "1.0 GiB / 40.0 GiB", "5%", "—"]
    )
    expect(rows.nth(2).locator("td")).to_have_text(
        ["GPU 1", "NVIDIA A100-SXM4-80GB", "3.0 GiB / 80.0 GiB", "7%", f"ml/{XSS}"]
    )
    _to_top(widget)
    nb.screenshot("cluster_widget_one_host")

    # all nodes: each of the three its memory and utilization panels, no summary
    select.select_option("all")
    panels = nb.in_output(2, ".nbgpumon-nodes [data-panel]")
    expect(panels).to_have_count(6)
    expect(nb.in_output(2, ".nbgpumon-node-summary")).to_be_hidden()
    assert _legend(_panel(nb, 2, "node:gpu-node-02:memory")) == ["GPU 0", "GPU 1"]
    expect(_panel(nb, 2, "node:gpu-node-03:memory").locator(".u-legend .u-value")).to_have_text(
        ["latest", "3.0 GiB", "4.0 GiB"]
    )
    _to_top(widget)
    nb.screenshot("cluster_widget_all_nodes")

    # twelve nodes: panels for the first eight, a summary row for each of the other four
    nb.run_cell(5)
    expect(select.locator("option")).to_have_count(14)
    expect(panels).to_have_count(16)
    expect(_panel(nb, 2, "node:gpu-node-08:util")).to_have_count(1)
    expect(_panel(nb, 2, "node:gpu-node-09:util")).to_have_count(0)
    summary = nb.in_output(2, ".nbgpumon-summary tbody tr")
    expect(summary).to_have_count(4)
    assert summary.evaluate_all("rows => rows.map((r) => r.dataset.host)") == [
        f"gpu-node-{k:02d}" for k in range(9, 13)
    ]
    expect(nb.in_output(2, ".nbgpumon-node-note")).to_contain_text("4 more nodes")
    # gpu-node-09 is k = 8: 9 + 10 GiB of 2 x 80 GiB, 45% and 46% busy
    age = re.compile(r"^\d+ s ago$")
    figures = ["gpu-node-09", "2", "19.0 GiB / 160 GiB", "46%", "46%", age]
    expect(summary.nth(0).locator("td")).to_have_text(figures)
    _to_top(widget)
    nb.screenshot("cluster_widget_summary")
    summary.nth(0).click()  # a summary row shows its host
    expect(select).to_have_value("host:gpu-node-09")
    expect(panels).to_have_count(2)
    expect(_panel(nb, 2, "node:gpu-node-09:memory")).to_be_visible()

    select.select_option("local")  # and back: this kernel's panels, no node panel left
    expect(nb.in_output(2, '[data-panel="gpu0-memory"]')).to_be_visible()
    expect(panels).to_have_count(0)
    expect(nb.in_output(2, "img")).to_have_count(0)
    assert xss_requests == []
    page.record.assert_clean()
