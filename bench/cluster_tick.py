"""What reading a cluster costs the sampler: tick time with the cluster source off and on.

A loopback server stands in for a Prometheus server with ``--nodes`` × ``--gpus`` remote
GPUs (five DCGM series each, answering an instant query in the API's JSON). The source's
worker reads it every second; the sampler's ticks only take what the worker fetched
(``take()``, nearly always empty) and append a row to the cluster timeline when an answer came.

1. Direct ``Sampler.tick()`` calls in rotated blocks, the source off and on: wall time per tick.
2. The parts: ``take()`` with nothing new, and one ``NodeTimeline.add`` of a whole answer.
3. The worker's own cost per answer: the request on loopback plus turning the series into
   cluster columns (off the sampler's thread; it holds the GIL only while parsing).
4. A server that never answers: tick times while the worker waits on it (no stall).

    python bench/cluster_tick.py --out DIR [--quick]
"""

from __future__ import annotations

import argparse
import gc
import http.server
import json
import threading
import time

import result_file
import stats

import nbgpumon
from nbgpumon._session.config import GPUMon
from nbgpumon._sources.cluster_series import reading_from
from nbgpumon._sources.prometheus_http import PrometheusClient
from nbgpumon._views.status.cluster import cluster_status

TICK_TARGET_US = 40.0  # the sampler's per-tick budget per GPU (tick_cost.py)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--gpus", type=int, default=4, help="GPUs per node")
    parser.add_argument("--ticks", type=int, default=2000, help="ticks per block")
    parser.add_argument("--blocks", type=int, default=10, help="off/on blocks, rotated")


def vector(nodes: int, gpus: int, t: float) -> dict:
    """An instant query's answer: DCGM series for ``nodes`` × ``gpus`` GPUs."""
    result = []
    for n in range(nodes):
        for g in range(gpus):
            labels = {
                "gpu": str(g), "Hostname": f"node-{n:03d}", "modelName": "NVIDIA H100",
                "UUID": f"GPU-{n:04d}-{g:04d}", "job": "dcgm", "instance": f"10.0.0.{n}:9400",
            }  # fmt: skip
            for name, value in (
                ("DCGM_FI_DEV_FB_USED", 40000 + g), ("DCGM_FI_DEV_FB_FREE", 40000),
                ("DCGM_FI_DEV_GPU_UTIL", 50 + g), ("DCGM_FI_DEV_POWER_USAGE", 500.5),
                ("DCGM_FI_DEV_GPU_TEMP", 60),
            ):  # fmt: skip
                result.append({"metric": {**labels, "__name__": name}, "value": [t, str(value)]})
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


class FakePrometheus:
    """Answers /api/v1/query with ``vector``; ``hang`` makes it wait until closed."""

    def __init__(self, nodes: int, gpus: int) -> None:
        self.hang = False
        self._release = threading.Event()
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if api.hang:
                    api._release.wait(60)
                if self.path.startswith("/api/v1/targets"):
                    answer = {"status": "success",
                              "data": {"activeTargets": [{"scrapeInterval": "1s"}]}}  # fmt: skip
                elif self.path.startswith("/api/v1/query_range"):
                    answer = {"status": "success", "data": {"resultType": "matrix", "result": []}}
                else:
                    answer = vector(nodes, gpus, time.time())
                body = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


def tick_times(mon: nbgpumon.Monitor, n: int) -> list[float]:
    clock, out = time.perf_counter_ns, []
    for _ in range(n):
        t0 = clock()
        mon._session.sampler.tick()
        out.append((clock() - t0) / 1e3)
    return out


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    result = result_file.Result("cluster_tick", args)
    ticks, blocks = (300, 4) if args.quick else (args.ticks, args.blocks)
    remote = args.nodes * args.gpus
    server = FakePrometheus(args.nodes, args.gpus)
    mon = nbgpumon.Monitor(GPUMon(cluster_timeout=2.0))  # not started: ticked from here
    result.details.update(local_gpus=len(mon._session.device_source.devices), remote_gpus=remote)
    try:
        mon.read_cluster(server.url)
        deadline = time.monotonic() + 10
        while mon.data.cluster.cursor == 0 and time.monotonic() < deadline:
            mon._session.sampler.tick()
            time.sleep(0.01)
        # -- 1: ticks, off and on, rotated ----------------------------------------------
        samples: dict[str, list[float]] = {"off": [], "on": []}
        source = mon._session.sampler.remote
        for b in range(blocks):
            for state in ("off", "on") if b % 2 == 0 else ("on", "off"):
                mon._session.sampler.remote = source if state == "on" else None
                gc.collect()
                samples[state] += tick_times(mon, ticks)
        mon._session.sampler.remote = source
        off, on = stats.describe(samples["off"]), stats.describe(samples["on"])
        result.add(
            f"tick, cluster source off ({len(mon._session.device_source.devices)} local GPUs)",
            off["median"], "µs",
            note=f"p99 {off['p99']:.1f} µs",
        )  # fmt: skip
        result.add(
            f"tick, cluster source on ({remote} remote GPUs, worker reading every 1 s)",
            on["median"], "µs", note=f"p99 {on['p99']:.1f} µs; rows taken during the blocks: "
            f"{mon.data.cluster.cursor}",
        )  # fmt: skip
        result.add("tick cost the cluster source adds (median)", on["median"] - off["median"], "µs")
        result.details["ticks"] = {"off": off, "on": on}

        # -- 2: the parts --------------------------------------------------------------
        empty = []
        for _ in range(5000):
            t0 = time.perf_counter_ns()
            source.take()
            empty.append((time.perf_counter_ns() - t0) / 1e3)
        result.add("take() with nothing new", stats.median(empty), "µs")
        client = PrometheusClient(server.url)
        at, series = client.query("up")
        reading = reading_from(at, series)
        adds = []
        nodes = mon._session.node_timeline()
        for k in range(200 if args.quick else 1000):
            shifted = type(reading)(at + 1000 + k, reading.values, reading.gpus)
            t0 = time.perf_counter_ns()
            nodes.add(shifted)
            adds.append((time.perf_counter_ns() - t0) / 1e3)
        result.add(
            f"NodeTimeline.add of one answer ({remote} GPUs, {len(reading.values)} values)",
            stats.median(adds), "µs", note=f"p99 {stats.percentile(adds, 99):.1f} µs; once per "
            "answer, not per tick",
        )  # fmt: skip

        # -- 3: the worker's work per answer ---------------------------------------------
        fetch, parse = [], []
        for _ in range(20 if args.quick else 100):
            t0 = time.perf_counter()
            at, series = client.query("up")
            t1 = time.perf_counter()
            reading_from(at, series)
            t2 = time.perf_counter()
            fetch.append((t1 - t0) * 1e3)
            parse.append((t2 - t1) * 1e3)
        result.add(
            f"worker: one instant query on loopback ({len(series)} series)", stats.median(fetch),
            "ms", note=f"p99 {stats.percentile(fetch, 99):.2f} ms; off the sampler's thread",
        )  # fmt: skip
        result.add("worker: series to cluster columns", stats.median(parse), "ms")

        # -- 4: a server that hangs ------------------------------------------------------
        server.hang = True
        deadline = time.monotonic() + 5
        while (
            "no answer" not in cluster_status(mon.data.cluster.state)
            and time.monotonic() < deadline
        ):
            mon._session.sampler.tick()
            time.sleep(0.01)
        hung = stats.describe(tick_times(mon, ticks))
        result.add(
            "tick while the server does not answer", hung["median"], "µs",
            note=f"p99 {hung['p99']:.1f} µs, max {hung['max']:.1f} µs; status: "
            f"{cluster_status(mon.data.cluster.state)}",
        )  # fmt: skip
    finally:
        mon.close()
        server.close()
    result.finish()


if __name__ == "__main__":
    main()
