"""The live widget's cluster view in a real JupyterLab: other nodes' GPUs, fed through the
session's node timeline (what the Prometheus source fills), show up behind a host selector, as
one host's panels and GPU list, as every node's panels, and as summary rows beyond 8 nodes.

The kernel's GPU is faked at NVML's boundary (tests/fake_nvml); the nodes' answers are
``NodeReading``s added from a cell, as the sampler adds the cluster source's."""

from __future__ import annotations

import re
import socket
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
    nodes = nbgpumon.monitor().node_timeline()
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


# -- through a real Prometheus ---------------------------------------------------------------
DCGM_TEXT = (Path(__file__).resolve().parent.parent / "data" / "dcgm-two-nodes.prom").read_text()


def test_a_real_prometheus_server_s_nodes_show_in_the_chart(page, open_notebook, tmp_path):
    """This kernel exports its (fake) GPU; Prometheus scrapes it and recorded DCGM-exporter
    text for two other nodes; the kernel reads the cluster back and the chart shows all
    three hosts behind the selector, each with its GPUs' numbers."""
    from playwright.sync_api import expect

    from prometheus_server import PrometheusServer, TextTarget, free_port

    port = free_port()
    dcgm = TextTarget(DCGM_TEXT)
    server = PrometheusServer(
        tmp_path, {"dcgm": [dcgm.address], "nbgpumon": [f"127.0.0.1:{port}"]}
    ).start()
    try:
        wait = (
            "import time, nbgpumon\n_d = time.monotonic() + 60\n"
            "while len(nbgpumon.monitor().cluster.nodes()) < 3 and time.monotonic() < _d:\n"
            "    time.sleep(0.1)\n"
            "print('HOSTS', len(nbgpumon.monitor().cluster.nodes()))"
        )
        cells = [SETUP, "%load_ext nbgpumon", f"%gpumon export {port}",
                 f"%gpumon cluster {server.url}", wait, "%gpumon"]  # fmt: skip
        nb = open_notebook(cells)
        for i in range(len(cells)):
            nb.run_cell(i)
        expect(nb.outputs(4)).to_contain_text("HOSTS 3")
        select = nb.in_output(5, ".nbgpumon-host-select")
        this_host = socket.gethostname()
        hosts = sorted(["node-a", "node-b", this_host])
        expect(select.locator("option")).to_have_text(["this kernel", "all nodes", *hosts])

        select.select_option("host:node-b")
        memory = _panel(nb, 5, "node:node-b:memory")
        expect(memory).to_be_visible()
        assert _legend(memory) == ["GPU 0 MIG 1", "GPU 0 MIG 2", "GPU 1"]
        # DCGM's MiB as bytes: 9984 MiB, 512 MiB, 30000 MiB
        expect(memory.locator(".u-legend .u-value")).to_have_text(
            ["latest", "9.8 GiB", "512 MiB", "29.3 GiB"]
        )
        rows = nb.in_output(5, ".nbgpumon-gpus tbody tr")
        expect(rows.nth(2).locator("td")).to_have_text(
            ["GPU 1", "NVIDIA A100-SXM4-40GB", "29.3 GiB / 39.5 GiB", "45%", "—"]
        )
        select.select_option(f"host:{this_host}")  # this kernel, read back through Prometheus
        mine = _panel(nb, 5, f"node:{this_host}:memory")
        expect(mine.locator(".u-legend .u-value")).to_have_text(["latest", "3.0 GiB"])
        select.select_option("all")
        expect(nb.in_output(5, ".nbgpumon-nodes [data-panel]")).to_have_count(6)
        expect(nb.in_output(5, ".nbgpumon-cluster-status")).to_contain_text(
            f"3 nodes, 6 GPUs from {server.url}, every 1 s"
        )
        _to_top(nb.in_output(5, ".nbgpumon-widget").first)
        nb.screenshot("cluster_widget_prometheus")
        page.record.assert_clean()
    finally:
        server.stop()
        dcgm.close()
