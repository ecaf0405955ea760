"""The live widget with a real Prometheus server, in JupyterLab 4 and Notebook 7: this kernel
exports its GPU (faked at NVML's boundary), Prometheus scrapes it and recorded DCGM-exporter text
for two other nodes, the kernel reads the cluster back, and the chart's node selector shows all
three hosts with their GPUs' numbers. The Lab screenshot of "all nodes" is docs/cluster.png
(scripts/pictures cluster)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from test_cluster_widget import SETUP, _legend, _panel, _to_top

from pictures import save_picture

pytestmark = pytest.mark.browser

DCGM_TEXT = (Path(__file__).resolve().parent.parent / "data" / "dcgm-two-nodes.prom").read_text()


def test_a_real_prometheus_server_s_nodes_show_in_the_chart(page, open_notebook, jupyter, tmp_path):
    from playwright.sync_api import expect

    from prometheus_server import WAIT_FOR_THREE_HOSTS, PrometheusServer, TextTarget, free_port

    port = free_port()
    dcgm = TextTarget(DCGM_TEXT)
    server = PrometheusServer(
        tmp_path, {"dcgm": [dcgm.address], "nbgpumon": [f"127.0.0.1:{port}"]}
    ).start()
    try:
        cells = [SETUP, "%load_ext nbgpumon", f"%gpumon export {port}",
                 f"%gpumon cluster {server.url}", WAIT_FOR_THREE_HOSTS, "%gpumon"]  # fmt: skip
        nb = open_notebook(cells)
        for i in range(len(cells)):
            nb.run_cell(i)
        this_host = socket.gethostname()
        hosts = sorted(["node-a", "node-b", this_host])
        expect(nb.outputs(4)).to_contain_text(f"HOSTS {hosts!r}")
        select = nb.in_output(5, ".nbgpumon-host-select")
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
        # the picture has a time axis once the nodes' samples span 2 s (answers every 1 s)
        expect(nb.in_output(5, ".nbgpumon-shown").first).to_have_text(
            re.compile(r"^([2-9]|\d{2,}) s of data$"), timeout=30_000
        )
        _to_top(nb.in_output(5, ".nbgpumon-widget").first)
        nb.screenshot(f"cluster_widget_prometheus_{jupyter.kind}")
        if jupyter.kind == "lab":
            save_picture(page, "cluster")
        page.record.assert_clean()
    finally:
        server.stop()
        dcgm.close()
