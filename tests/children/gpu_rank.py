"""A torchrun worker: every rank holds 1 GiB on cuda:0 for 3 s (two ranks share one GPU)."""

import os
import time

import torch

torch.cuda.set_device(0)
held = torch.empty(2**30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print(f"rank {os.environ.get('RANK')} ready", flush=True)
time.sleep(3)
