"""A child that holds GPU memory with torch, and says what the driver counted for it.

    python gpu_hold.py BYTES SECONDS

It allocates BYTES on cuda:0, prints ``ready``, holds them SECONDS while reading its own
figure in the driver's process list every 20 ms, and prints ``TRUTH <bytes>``: the highest of
them (what nbgpumon's sampled peak of this child is checked against).
"""

from __future__ import annotations

import os
import sys
import time

import pynvml
import torch


def own_figure(handle) -> int:
    for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
        if p.pid == os.getpid() and isinstance(p.usedGpuMemory, int):
            return p.usedGpuMemory
    return 0


def main() -> None:
    size, seconds = int(sys.argv[1]), float(sys.argv[2])
    held = torch.empty(size, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    print("ready", flush=True)
    truth, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        truth = max(truth, own_figure(handle))
        time.sleep(0.02)
    print(f"TRUTH {truth}", flush=True)
    del held


if __name__ == "__main__":
    main()
