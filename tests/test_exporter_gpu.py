"""The exporter on a real GPU (``-m gpu``): torch's allocator in Prometheus, to the byte."""

from __future__ import annotations

import math
import time
import urllib.request

import pytest

from nbgpumon import Monitor

from gpu_required import needs_cuda
from prometheus_server import free_port, samples

pytestmark = [pytest.mark.gpu, pytest.mark.torch]


def test_torch_s_allocated_bytes_are_scraped_exactly_as_torch_counts_them():
    torch = needs_cuda()
    mon = Monitor()
    mon.start()
    try:
        tensor = torch.empty(2**30, dtype=torch.uint8, device="cuda")  # CUDA is up: torch is read
        allocated = torch.cuda.memory_allocated(0)
        (device,) = [d for d in mon.data.devices if d.cuda_index == 0]
        column = f"gpu{device.index}.torch.allocated"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the sampler reads the allocator every 0.5 s
            latest = mon.timeline.latest() or {}
            if latest.get(column) == allocated:
                break
            time.sleep(0.02)
        port = free_port()
        mon.export(port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        torch_rows = [
            (labels, v)
            for labels, v in samples(text, "nbgpumon_allocator_allocated_bytes")
            if labels["framework"] == "torch" and labels["gpu"] == str(device.index)
        ]
        assert len(torch_rows) == 1, text
        labels, value = torch_rows[0]
        assert value == allocated >= 2**30
        assert labels["UUID"] == device.uuid and labels["modelName"] == device.name
        used = [v for got, v in samples(text, "nbgpumon_gpu_memory_used_bytes")
                if got["gpu"] == str(device.index)]  # fmt: skip
        assert used and used[0] >= allocated  # NVML sees the allocation, and more
        reserved = [v for got, v in samples(text, "nbgpumon_allocator_reserved_bytes")
                    if got["framework"] == "torch" and got["gpu"] == str(device.index)]  # fmt: skip
        assert reserved == [torch.cuda.memory_reserved(0)]
        peak = [v for got, v in samples(text, "nbgpumon_allocator_peak_bytes")
                if got["framework"] == "torch" and got["gpu"] == str(device.index)]  # fmt: skip
        assert peak and not math.isnan(peak[0]) and peak[0] >= allocated
        del tensor
    finally:
        mon.close()
