"""A real Prometheus server on loopback for the cluster tests, and the targets it scrapes.

``PrometheusServer`` runs Debian's ``prometheus`` binary with a generated config (a scrape
interval of 1 s, so tests wait seconds, not minutes) and a storage folder of its own. The
``TextTarget`` is a loopback HTTP server that serves a fixed exposition text (the DCGM
exporter's, recorded in tests/data) and can change it mid-test. ``FakeApi`` stands in for a
Prometheus server that misbehaves: slow, HTTP 500, or garbage.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import threading
import urllib.parse
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from required import PROMETHEUS as PROMETHEUS_REQUIRED
from required import skip_unless_required
from waiting import until

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
SCRAPE_SECONDS = 1

# A kernel cell that waits (60 s at most) until the cluster view has three hosts, the two
# recorded DCGM nodes and this one (through its own exporter), then prints them.
WAIT_FOR_THREE_HOSTS = (
    "import time as _t, nbgpumon as _n\n"
    "_d = _t.monotonic() + 60\n"
    "while len(_n.monitor().data.cluster.nodes()) < 3 and _t.monotonic() < _d:\n"
    "    _t.sleep(0.1)\n"
    "print('HOSTS', [n.host for n in _n.monitor().data.cluster.nodes()])"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample named ``name`` in an exposition text (a scrape), parsed by
    prometheus_client's own parser."""
    return [
        (dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


def require_prometheus() -> None:
    """Skip without the binary, unless CI says it must be there (then fail)."""
    if Path(PROMETHEUS).exists():
        return
    skip_unless_required(
        f"no prometheus binary at {PROMETHEUS} (apt-get install prometheus; .ci/run does)",
        PROMETHEUS_REQUIRED,
    )


class PrometheusServer:
    """``prometheus`` scraping ``targets`` ({job: ["127.0.0.1:PORT", ...]}) every second."""

    def __init__(self, folder: Path, targets: dict[str, list[str]], port: int | None = None):
        require_prometheus()
        self.folder = folder
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.targets = targets
        self._process: subprocess.Popen | None = None

    def config_text(self) -> str:
        jobs = [
            f"  - job_name: {job}\n    static_configs:\n      - targets: {json.dumps(hosts)}"
            for job, hosts in self.targets.items()
        ]
        return (
            f"global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: 15s\n"
            "scrape_configs:\n" + "\n".join(jobs) + "\n"
        )

    def start(self) -> PrometheusServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "prometheus.yml"
        config.write_text(self.config_text())
        log = open(self.folder / "prometheus.log", "ab")  # noqa: SIM115 - the process keeps it
        self._process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={self.folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        until(self._ready, f"Prometheus to be ready on {self.url}", 60)
        return self

    def _ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            log = (self.folder / "prometheus.log").read_text(errors="replace")[-2000:]
            raise AssertionError(f"prometheus exited ({self._process.returncode}): {log}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        self._process = None

    def query(self, promql: str) -> list[dict]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)["data"]["result"]

    def wait_for_series(self, promql: str, count: int, timeout: float = 60) -> list[dict]:
        """Wait until ``promql`` has at least ``count`` series (its targets were scraped)."""
        return until(
            lambda: (found := self.query(promql)) and len(found) >= count and found,
            f"{count} series of {promql} in Prometheus",
            timeout,
            every=0.25,
        )


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class TextTarget:
    """A loopback scrape target serving ``text`` at /metrics (changeable while it runs)."""

    def __init__(self, text: str) -> None:
        self.text = text
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = target.text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeApi:
    """A loopback server answering the Prometheus API badly: ``mode`` is "slow" (waits
    ``delay`` s, then answers ``good``), "500", "garbage", or "good" (answers ``good``)."""

    def __init__(self, good: dict | None = None, delay: float = 30.0) -> None:
        self.mode = "good"
        self.delay = delay
        self.good = good or {"status": "success", "data": {"resultType": "vector", "result": []}}
        self.requests = 0
        self.targets = [{"scrapeInterval": "1s"}]  # /api/v1/targets' activeTargets
        self.config_yaml = ""  # /api/v1/status/config's yaml
        self._release = threading.Event()  # ends every sleeping answer at close
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                api.requests += 1
                mode = api.mode
                if mode == "slow":
                    api._release.wait(api.delay)
                status, body = 200, json.dumps(api._answer(self.path)).encode()
                if mode == "500":
                    status = 500
                    body = b'{"status":"error","errorType":"internal","error":"storage is on fire"}'
                elif mode == "garbage":
                    body = b"<html><body>Welcome to nginx!</body></html>"
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, *args):
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _answer(self, path: str) -> dict:
        if path.startswith("/api/v1/targets"):
            return {"status": "success", "data": {"activeTargets": self.targets}}
        if path.startswith("/api/v1/status/config"):
            return {"status": "success", "data": {"yaml": self.config_yaml}}
        if path.startswith("/api/v1/query_range"):
            return {"status": "success", "data": {"resultType": "matrix", "result": []}}
        return self.good

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
