"""The whole loop on a real GPU (``-m gpu``): torch's allocator, exported by this process,
scraped by a real Prometheus, read back by the cluster source, to the byte."""

from __future__ import annotations

import socket
import time

import pytest

from nbgpumon import GPUMon, Monitor

from gpu_required import needs_cuda
from prometheus_server import PrometheusServer, free_port
from waiting import until

pytestmark = [pytest.mark.gpu, pytest.mark.torch]


def test_torch_s_allocated_bytes_come_back_through_prometheus(tmp_path):
    torch = needs_cuda()
    port = free_port()
    server = PrometheusServer(tmp_path, {"nbgpumon": [f"127.0.0.1:{port}"]})
    mon = Monitor(GPUMon(cluster_timeout=2.0))
    mon.start()
    try:
        tensor = torch.empty(3 * 2**30, dtype=torch.uint8, device="cuda")
        allocated = torch.cuda.memory_allocated(0)
        (device,) = [d for d in mon.data.devices if d.cuda_index == 0]
        host, gpu = socket.gethostname(), f"gpu{device.index}"
        mon.export(port)
        server.start()
        mon.read_cluster(server.url)
        column = f"node:{host}.{gpu}.allocated"
        started = time.monotonic()
        latest = until(
            lambda: (row := mon.data.cluster.latest() or {}).get(column) == allocated and row,
            "this process's torch bytes in the cluster timeline",
            60,
        )
        seconds = time.monotonic() - started
        used = latest[f"node:{host}.{gpu}.mem_used"]
        assert used >= allocated  # NVML's view, through the exporter and Prometheus
        assert latest[f"node:{host}.{gpu}.mem_total"] == device.memory_total
        (node,) = [n for n in mon.data.cluster.nodes() if n.host == host]
        assert [g.uuid for g in node.gpus if g.gpu == gpu] == [device.uuid]
        print(f"allocated {allocated} B back through Prometheus in {seconds:.1f} s")
        del tensor
    finally:
        mon.close()
        server.stop()
