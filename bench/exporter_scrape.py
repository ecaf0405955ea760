"""What one Prometheus scrape of the exporter costs: HTTP GET /metrics on loopback.

The session has ``--gpus`` GPUs faked at NVML's boundary (tests/fake_nvml), a framework
allocator up on each (JAX, faked at its boundary, so the allocator families are in the
answer too) and ``--records`` cells in the ledger. The sampler is stopped after filling the
timeline, so the numbers are the scrape's alone.

1. A full scrape: connect, GET /metrics, read the whole answer (a new connection each time,
   as Prometheus's scraper does with this HTTP/1.0 server): median and p99.
2. The collector alone (the families built and rendered as text, no HTTP), which is the part
   that holds the GIL and so takes time from the kernel's own code.

    python bench/exporter_scrape.py --out DIR [--quick]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import socket
import sys
import time
import urllib.request
from pathlib import Path

import result_file
import stats

import nbgpumon
from nbgpumon._session.config import GPUMon

TESTS = Path(__file__).resolve().parents[1] / "tests"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--records", type=int, default=500, help="cells in the ledger")
    parser.add_argument("--scrapes", type=int, default=2000)


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("exporter_scrape", args)
    scrapes = 200 if args.quick else args.scrapes
    nvml = _module("bench_fake_pynvml", TESTS / "fake_nvml" / "pynvml.py")
    nvml.configure(
        {"devices": [{"name": "Fake H200", "used": (g + 1) * 2**30} for g in range(args.gpus)]}
    )
    frameworks = _module("bench_fake_frameworks", TESTS / "fake_frameworks.py")
    gpus = [frameworks.FakeJaxDevice(g) for g in range(args.gpus)]
    for g, gpu in enumerate(gpus):
        gpu.use((g + 1) * 2**28, pool=2**33)
    sys.modules.update(frameworks.fake_jax({"cuda": frameworks.FakeJaxClient(gpus)}))

    config = GPUMon(history=max(args.records, 1), detail_interval=0.01)
    mon = nbgpumon.Monitor(config, nvml_module=nvml)
    try:
        mon.stop()
        for _ in range(50):  # PCIe rates need two detail reads, 10 ms apart at least
            mon._session.sampler.tick()
            time.sleep(0.002)
        for count in range(1, args.records + 1):
            opened = mon._session.ledger.begin("cell", f"step({count})", count)
            ledger = mon._session.ledger
            ledger.add(ledger.end(opened, status="error" if count % 50 == 0 else "ok"))
        port = _free_port()
        mon.export(port)
        url = f"http://127.0.0.1:{port}/metrics"
        body = urllib.request.urlopen(url, timeout=10).read()
        lines = [line for line in body.decode().splitlines() if not line.startswith("#")]
        result.details.update(
            gpus=args.gpus,
            records=len(mon.data.records),
            answer_bytes=len(body),
            samples=len(lines),
        )

        # -- 1: full scrapes over HTTP ----------------------------------------------------
        gc.collect()
        full = []
        for _ in range(scrapes):
            t0 = time.perf_counter_ns()
            with urllib.request.urlopen(url, timeout=10) as response:
                response.read()
            full.append((time.perf_counter_ns() - t0) / 1e6)
        d = stats.describe(full)
        result.add(
            f"full scrape, HTTP GET /metrics on loopback ({args.gpus} GPUs, "
            f"{len(mon.data.records)} cells, {len(lines)} samples, {len(body):,} bytes)",
            d["median"], "ms", note=f"p99 {d['p99']:.2f} ms, max {d['max']:.2f} ms",
        )  # fmt: skip
        result.details["full_ms"] = d

        # -- 2: the collector alone ------------------------------------------------------
        collector = mon._collector
        alone = []
        for _ in range(scrapes):
            t0 = time.perf_counter_ns()
            collector.text()
            alone.append((time.perf_counter_ns() - t0) / 1e6)
        d = stats.describe(alone)
        result.add(
            "collector alone: families built and rendered (GIL held)", d["median"], "ms",
            note=f"p99 {d['p99']:.2f} ms",
        )  # fmt: skip
        result.details["collector_ms"] = d
        mon.export(None)
    finally:
        mon.close()
    result.finish()


if __name__ == "__main__":
    main()
