"""The Prometheus exporter: the collector's families from a session on fake NVML, and the
server's life in a real kernel (%gpumon export), in a plain process (nbgpumon.serve()) and
under ``python -m nbgpumon serve``, scraped over HTTP as Prometheus would."""

from __future__ import annotations

import collections
import errno
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from nbgpumon import GPUMon, Monitor, UsageError
from nbgpumon._api.exporter import THREAD_NAME, process_rank
from nbgpumon._api.exporter_families import SessionCollector

from fake_frameworks import GIB, FakeJaxClient, FakeJaxDevice, fake_jax
from kernel_client import Kernel
from notebook_runner import fake_nvml_env, fake_pynvml
from prometheus_server import free_port, samples
from waiting import until

HOST = socket.gethostname()
TWO_GPUS = [
    {
        "name": "Fake H200", "uuid": "GPU-aaaa", "used": 3 * GIB, "total": 141 * GIB,
        "reserved": 512 * 2**20, "util": 87, "mem_util": 35, "temperature": 61,
        "power_mw": 412_500, "power_limit_mw": 700_000, "sm_clock": 1980,
    },
    {"name": "Fake H200", "uuid": "GPU-bbbb", "used": 5 * GIB, "total": 141 * GIB, "util": 3},
]  # fmt: skip
DEADLINE = 30  # seconds any awaited condition gets
SCRAPES: collections.Counter[int] = collections.Counter()  # by port: this test's scrapes


# -- helpers ---------------------------------------------------------------------------------
def value(text: str, name: str, **labels: str) -> float | None:
    """The value of the one sample of ``name`` whose labels include ``labels`` (None: none)."""
    found = [v for got, v in samples(text, name) if labels.items() <= got.items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def scrape(port: int, host: str = "127.0.0.1") -> str:
    SCRAPES[port] += 1
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        return response.read().decode()


def _tcp_connections() -> list:
    """This process's TCP sockets (psutil 6 renamed ``connections``; Colab has psutil 5.9.5)."""
    process = psutil.Process()
    return getattr(process, "net_connections", process.connections)("tcp")


def port_is_free(port: int) -> bool:
    """Whether another server could listen on ``port`` now (as prometheus_client's does, with
    SO_REUSEADDR: connections the exporter closed may linger in TIME_WAIT, which is no server)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError as exc:
            assert exc.errno == errno.EADDRINUSE, exc
            return False
    return True


def text_of(msgs: list[dict]) -> str:
    parts = []
    for m in msgs:
        content = m["content"]
        if m["msg_type"] == "stream":
            parts.append(content["text"])
        elif m["msg_type"] in ("execute_result", "display_data"):
            parts.append(content["data"].get("text/plain", ""))
        elif m["msg_type"] == "error":
            parts.append(
                f"{content['ename']}: {content['evalue']}\n" + "".join(content["traceback"])
            )
    return "".join(parts)


# -- the collector: a session's families ------------------------------------------------------
@pytest.fixture
def monitor(monkeypatch) -> Iterator[Monitor]:
    monkeypatch.delenv("RANK", raising=False)
    mon = Monitor(GPUMon(detail_interval=0.01), nvml_module=fake_pynvml(devices=TWO_GPUS))
    mon.stop()  # ticks by hand: each test says when a sample is taken
    try:
        yield mon
    finally:
        mon.close()


def _install(monkeypatch, modules: dict) -> None:
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def _after_one_tick(nvml: object) -> str:
    """The exposition of a monitor on ``nvml`` after one tick of its (stopped) sampler."""
    mon = Monitor(nvml_module=nvml)
    try:
        mon.stop()
        mon._session.sampler.tick()
        return SessionCollector(mon.data).text()
    finally:
        mon.close()


def _sampled(mon: Monitor) -> None:
    """Ticks until the PCIe rates (differenced between two detail reads) have a value."""

    def ready() -> bool:
        mon._session.sampler.tick()
        return not math.isnan(mon.timeline.latest()["gpu0.nvml.pcie_tx"])

    until(ready, "a PCIe rate")


def test_each_gpu_s_figures_are_exported_in_base_units_with_dcgm_s_labels(monitor):
    _sampled(monitor)
    text = SessionCollector(monitor.data).text()
    gpu0 = {"gpu": "0", "UUID": "GPU-aaaa", "modelName": "Fake H200", "Hostname": HOST}
    used = samples(text, "nbgpumon_gpu_memory_used_bytes")
    assert used == [
        (gpu0, 3 * GIB),
        ({"gpu": "1", "UUID": "GPU-bbbb", "modelName": "Fake H200", "Hostname": HOST}, 5 * GIB),
    ]
    expected = {
        "nbgpumon_gpu_memory_total_bytes": 141 * GIB,
        "nbgpumon_gpu_memory_reserved_bytes": 512 * 2**20,
        "nbgpumon_gpu_utilization_ratio": 0.87,  # percent / 100
        "nbgpumon_gpu_memory_utilization_ratio": 0.35,
        "nbgpumon_gpu_power_watts": 412.5,  # NVML's milliwatts, in watts
        "nbgpumon_gpu_power_limit_watts": 700.0,
        "nbgpumon_gpu_temperature_celsius": 61.0,
        "nbgpumon_gpu_sm_clock_hertz": 1.98e9,  # MHz * 1e6
    }
    for name, want in expected.items():
        assert value(text, name, gpu="0") == pytest.approx(want, rel=1e-12), name
    assert value(text, "nbgpumon_gpu_utilization_ratio", gpu="1") == pytest.approx(0.03)
    # the fake's PCIe counters grow at 1 MB/s sent and 2 MB/s received
    assert value(text, "nbgpumon_gpu_pcie_transmit_bytes_per_second", gpu="0") == pytest.approx(
        1e6, rel=0.05
    )
    assert value(text, "nbgpumon_gpu_pcie_receive_bytes_per_second", gpu="0") == pytest.approx(
        2e6, rel=0.05
    )
    rss = value(text, "nbgpumon_host_rss_bytes", Hostname=HOST)
    assert rss == monitor.timeline.latest()["host.rss"] and rss > 2**20
    assert value(text, "nbgpumon_host_memory_available_bytes") > 0
    assert samples(text, "nbgpumon_build_info")[0][0]["version"] == "0.1.0"
    # no framework is up: no allocator family at all, and nothing exported as NaN
    assert "nbgpumon_allocator_" not in text and "NaN" not in text


def test_a_value_nvml_does_not_give_is_left_out_not_exported_as_nan():
    nvml = fake_pynvml(devices=TWO_GPUS, not_supported=["nvmlDeviceGetPowerUsage"])
    text = _after_one_tick(nvml)
    assert samples(text, "nbgpumon_gpu_power_watts") == []
    assert value(text, "nbgpumon_gpu_temperature_celsius", gpu="0") == 61.0
    assert "NaN" not in text


def test_an_allocator_s_gauges_carry_its_framework_and_the_process_rank(monkeypatch, monitor):
    monkeypatch.setenv("RANK", "3")
    gpu = FakeJaxDevice(0)
    gpu.use(3 * GIB, pool=8 * GIB)
    gpu.use(2 * GIB)  # JAX's peak stays at 3 GiB
    _install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    monitor._session.sampler.tick()
    text = SessionCollector(monitor.data, rank=process_rank()).text()
    labels = {
        "gpu": "0", "UUID": "GPU-aaaa", "modelName": "Fake H200", "Hostname": HOST,
        "framework": "jax", "rank": "3",
    }  # fmt: skip
    assert samples(text, "nbgpumon_allocator_allocated_bytes") == [(labels, 2 * GIB)]
    assert samples(text, "nbgpumon_allocator_reserved_bytes") == [(labels, 8 * GIB)]
    assert samples(text, "nbgpumon_allocator_peak_bytes") == [(labels, 3 * GIB)]
    # torch and CuPy are not up: no series of theirs; torch-only families have none at all
    assert 'framework="torch"' not in text and 'framework="cupy"' not in text
    assert "nbgpumon_allocator_active_bytes" not in text


def test_with_gpu0_hidden_the_allocator_s_cuda0_is_exported_as_physical_gpu1(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpu = FakeJaxDevice(0)  # the kernel's cuda:0
    gpu.use(2 * GIB, pool=4 * GIB)
    _install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    text = _after_one_tick(fake_pynvml(devices=TWO_GPUS))
    allocated = samples(text, "nbgpumon_allocator_allocated_bytes")
    assert [(labels["gpu"], labels["UUID"], v) for labels, v in allocated] == [
        ("1", "GPU-bbbb", 2 * GIB)
    ]
    # the hidden GPU's NVML figures are still the device's true view
    assert value(text, "nbgpumon_gpu_memory_used_bytes", gpu="0") == 3 * GIB


def test_cells_are_counted_by_outcome_and_the_last_one_is_described(monkeypatch, monitor):
    gpu = FakeJaxDevice(0)
    _install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    collector = SessionCollector(monitor.data)
    text = collector.text()
    assert value(text, "nbgpumon_running_cell") == 0
    assert [v for _, v in samples(text, "nbgpumon_cells_total")] == [0, 0, 0, 0]
    assert samples(text, "nbgpumon_last_cell_duration_seconds") == []  # no cell yet

    ledger = monitor._session.ledger
    ledger.add(ledger.end(ledger.begin("cell", "a = 1", 1)))
    ledger.add(
        ledger.end(ledger.begin("cell", "1/0", 2), status="error", error="ZeroDivisionError")
    )
    opened = ledger.begin("cell", "x = jnp.ones(...)", 3)
    region = ledger.begin("region", "epoch 1", 3)  # a region is no cell
    ledger.add(ledger.end(region))
    text = collector.text()
    assert value(text, "nbgpumon_running_cell", Hostname=HOST) == 3
    gpu.use(3 * GIB)
    gpu.use(GIB)
    record = ledger.add(ledger.end(opened))
    text = collector.text()
    assert value(text, "nbgpumon_running_cell") == 0
    by_status = {labels["status"]: v for labels, v in samples(text, "nbgpumon_cells_total")}
    assert by_status == {"ok": 2, "error": 1, "interrupted": 0, "oom": 0}
    assert value(text, "nbgpumon_last_cell_execution_count", Hostname=HOST) == 3
    assert value(text, "nbgpumon_last_cell_duration_seconds") == record.duration
    assert value(text, "nbgpumon_last_cell_peak_bytes") == 3 * GIB
    assert value(text, "nbgpumon_last_cell_kept_bytes") == GIB
    assert collector.scrapes == 3


def test_the_cell_counter_keeps_counting_when_the_ledger_drops_its_oldest_records():
    mon = Monitor(GPUMon(history=2), nvml_module=fake_pynvml(devices=[]))
    try:
        mon.stop()
        collector = SessionCollector(mon.data)
        for count in range(1, 6):
            mon._session.ledger.add(
                mon._session.ledger.end(mon._session.ledger.begin("cell", f"x = {count}", count))
            )
            collector.collect()  # a scrape after each cell
        assert len(mon.data.records) == 2
        text = collector.text()
    finally:
        mon.close()
    assert value(text, "nbgpumon_cells_total", status="ok") == 5
    assert value(text, "nbgpumon_last_cell_execution_count") == 5


def test_a_failing_read_is_the_collector_s_error_and_a_scrape_still_answers(monitor):
    collector = SessionCollector(monitor.data)

    def broken():
        raise RuntimeError("timeline gone")

    monitor.data.latest = broken
    text = collector.text()
    assert collector.error == "RuntimeError: timeline gone"
    assert samples(text, "nbgpumon_build_info")  # the scrape is served, with what it can say


# -- the server in this process -----------------------------------------------------------------
def test_it_listens_on_loopback_only_by_default(monitor):
    port = free_port()
    assert monitor.export(port) == f"exporting on http://127.0.0.1:{port}/metrics"
    assert monitor.config.export_port == port and monitor.config.export_host == "127.0.0.1"
    others = [
        a.address
        for addresses in psutil.net_if_addrs().values()
        for a in addresses
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    for address in others:  # this machine's other addresses: nothing listens there
        with socket.socket() as s, pytest.raises(ConnectionRefusedError):
            s.settimeout(5)
            s.connect((address, port))
    listening = [
        tuple(c.laddr) for c in _tcp_connections()
        if c.status == psutil.CONN_LISTEN and c.laddr[1] == port
    ]  # fmt: skip
    assert listening == [("127.0.0.1", port)]
    assert samples(scrape(port), "nbgpumon_build_info")
    assert monitor.export(None) == "exporter stopped"
    assert port_is_free(port) and monitor.config.export_port == 0
    assert THREAD_NAME not in [t.name for t in threading.enumerate()]


def test_a_bad_port_or_host_is_one_line_and_changes_nothing(monitor):
    port = free_port()
    monitor.export(port)
    for bad, says in (
        (70000, "the exporter's port is a number from 1 to 65535, not 70000"),
        (-1, "the exporter's port is a number from 1 to 65535, not -1"),
    ):
        with pytest.raises(UsageError, match=says):
            monitor.export(bad)
    with pytest.raises(UsageError, match=r"cannot listen on host 'no-such-host\.invalid'"):
        monitor.export(port + 1 if port < 65535 else port - 1, host="no-such-host.invalid")
    with pytest.raises(UsageError, match=r"cannot listen on 192\.0\.2\.1: it is not an address"):
        monitor.export(port, host="192.0.2.1")  # TEST-NET-1: no machine's own address
    # the exporter that was running goes on, and the settings still say where
    assert samples(scrape(port), "nbgpumon_build_info")
    assert (monitor.config.export_port, monitor.config.export_host) == (port, "127.0.0.1")
    with pytest.raises(Exception, match=r"is 0 \(off\) or a port from 1 to 65535, not 99999"):
        monitor.config.export_port = 99999
    assert monitor.config.export_port == port


def test_setting_export_port_starts_moves_and_stops_it(monitor, capsys):
    first, second = free_port(), free_port()
    monitor.config.export_port = first
    assert samples(scrape(first), "nbgpumon_build_info")
    monitor.config.export_port = second
    assert samples(scrape(second), "nbgpumon_build_info") and port_is_free(first)
    assert monitor.exporter_line == f"http://127.0.0.1:{second}/metrics, 2 scrapes served"
    monitor.config.export_port = 0
    assert port_is_free(second) and monitor.exporter_line == ""
    assert capsys.readouterr().out.splitlines() == [
        f"nbgpumon: exporting on http://127.0.0.1:{first}/metrics",
        f"nbgpumon: exporting on http://127.0.0.1:{second}/metrics",
        "nbgpumon: exporter stopped",
    ]


def test_a_port_taken_by_another_server_is_one_clear_line(monitor):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError) as raised:
            monitor.export(port)
    assert str(raised.value) == (
        f"port {port} on 127.0.0.1 is in use (another exporter?); %gpumon export PORT picks another"
    )
    assert monitor.exporter_line == "" and monitor.config.export_port == 0


def test_a_client_that_hangs_up_mid_request_prints_nothing(monitor, capfd):
    port = free_port()
    monitor.export(port)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and hangs up before the end
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
    assert samples(scrape(port), "nbgpumon_build_info")
    monitor.export(None)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


def test_a_forked_child_closes_its_copy_of_the_listening_socket(monitor):
    port = free_port()
    monitor.export(port)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a DataLoader worker, say; it holds no listening socket
        try:
            os.close(reader)
            inherited = [
                c for c in _tcp_connections()
                if c.status == psutil.CONN_LISTEN and c.laddr[1] == port
            ]  # fmt: skip
            os.write(writer, str(len(inherited)).encode())
            time.sleep(30)  # alive until killed: its sockets are still open, if any
        finally:
            os._exit(0)
    try:
        os.close(writer)
        assert os.read(reader, 16) == b"0"
        monitor.export(None)
        assert port_is_free(port)  # while the child still lives
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(reader)


def test_serve_outside_ipython_starts_the_monitor_and_serves_rank_ports(tmp_path):
    port = free_port()
    script = tmp_path / "train.py"
    script.write_text(
        "import os, urllib.request, nbgpumon\n"
        f"line = nbgpumon.serve({port - 1})\n"
        "print('LINE', line)\n"
        "print('AGAIN', nbgpumon.serve())\n"  # a second call: the same server
        f"body = urllib.request.urlopen('http://127.0.0.1:{port}/metrics').read().decode()\n"
        "print('RUNNING', [l for l in body.splitlines() if l.startswith('nbgpumon_running')])\n"
    )
    env = {**os.environ, **fake_nvml_env(devices=[{}]), "LOCAL_RANK": "1", "RANK": "9"}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    url = f"http://127.0.0.1:{port}/metrics"
    assert lines[0] == f"LINE exporting on {url} ({port - 1} + LOCAL_RANK 1)"
    assert lines[1] == f"AGAIN exporting on {url}, 0 scrapes served"
    assert lines[2] == f"RUNNING ['nbgpumon_running_cell{{Hostname=\"{HOST}\"}} 0.0']"
    assert port_is_free(port)  # the process ended: its exporter with it


# -- python -m nbgpumon serve ------------------------------------------------------------------
def _serve(
    *args: str, env: dict | None = None, cwd: Path | None = None, sigint_ignored: bool = False
) -> subprocess.Popen:
    """``python -m nbgpumon serve ARGS``; ``sigint_ignored``: started as a script's background
    job is (``nohup cmd &``: the shell sets SIGINT ignored, and the child inherits it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "nbgpumon", "serve", *args],
        env={**os.environ, **fake_nvml_env(devices=TWO_GPUS), **(env or {})},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# a background job of a script (nohup, CI) is started with SIGINT ignored: Ctrl-C stops it too
@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["foreground", "background-job"])
def test_python_m_nbgpumon_serve_serves_until_ctrl_c(tmp_path, sigint_ignored):
    port = free_port()
    server = _serve("--port", str(port), sigint_ignored=sigint_ignored)
    try:
        first = server.stderr.readline()
        assert first == (
            f"nbgpumon: exporting on http://127.0.0.1:{port}/metrics "
            "(NVML and host metrics; Ctrl-C stops)\n"
        )
        text = scrape(port)
        assert value(text, "nbgpumon_gpu_memory_used_bytes", UUID="GPU-bbbb") == 5 * GIB
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0 and err == "" and out == ""
    assert port_is_free(port)


def test_ctrl_c_interrupts_the_served_script_even_with_sigint_ignored_on_entry(tmp_path):
    port = free_port()
    script = tmp_path / "train.py"
    script.write_text(
        "import time\n"
        "try:\n"
        "    print('TRAINING', flush=True)\n"  # inside: the signal may come right after it
        "    time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    print('INTERRUPTED')\n"
    )
    server = _serve("--port", str(port), str(script), sigint_ignored=True)
    try:
        assert server.stdout.readline() == "TRAINING\n"
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0 and out == "INTERRUPTED\n"
    assert port_is_free(port)


def test_serve_stops_cleanly_on_sigterm_too():
    port = free_port()
    server = _serve("--port", str(port))
    try:
        assert "exporting on" in server.stderr.readline()
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0 and port_is_free(port)


def test_serve_runs_a_script_with_its_arguments_and_exits_with_its_code(tmp_path):
    port = free_port()
    (tmp_path / "helper.py").write_text("NAME = 'helper beside the script'\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, urllib.request\n"
        "import helper\n"  # found as `python train.py` finds it: the script's folder first
        "print('ARGV', sys.argv[1:], __name__, helper.NAME)\n"
        f"body = urllib.request.urlopen('http://127.0.0.1:{port}/metrics').read().decode()\n"
        "print('SERVED', 'nbgpumon_gpu_memory_used_bytes' in body)\n"
        "sys.exit(7)\n"
    )
    server = _serve(
        "--port", str(port - 2), str(script), "--lr", "3e-4", "-x", env={"LOCAL_RANK": "2"}
    )
    out, err = server.communicate(timeout=120)
    assert server.returncode == 7, err
    assert out.splitlines() == [
        "ARGV ['--lr', '3e-4', '-x'] __main__ helper beside the script",
        "SERVED True",
    ]
    assert err == (
        f"nbgpumon: exporting on http://127.0.0.1:{port}/metrics ({port - 2} + LOCAL_RANK 2) "
        f"while {script} runs\n"
    )
    assert port_is_free(port)


def test_serve_s_mistakes_are_one_line_and_exit_code_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            (["--port", str(port)], f"port {port} on 127.0.0.1 is in use (another exporter?); "
             "--port PORT picks another"),
            (["--port", "70000"], "the exporter's port is a number from 1 to 65535, not 70000"),
            (["--port", "x"], "argument --port: invalid int value: 'x'"),
            (["no-such-script.py"], "no script at no-such-script.py"),
        ]  # fmt: skip
        for args, says in cases:
            done = _serve(*args, cwd=tmp_path)
            out, err = done.communicate(timeout=60)
            assert done.returncode == 2, (args, err)
            assert len(err.splitlines()) == 1 and says in err, (args, err)
            assert "Traceback" not in err and out == ""


# -- a real kernel ------------------------------------------------------------------------------
COUNT_EXPORTERS = (
    "import threading\n"
    f"print('EXPORTERS', len([t for t in threading.enumerate() if t.name == {THREAD_NAME!r}]))"
)


@pytest.fixture
def kernel(monkeypatch) -> Iterator[Kernel]:
    for name, setting in fake_nvml_env(devices=TWO_GPUS).items():
        monkeypatch.setenv(name, setting)
    k = Kernel()
    try:
        yield k
    finally:
        k.stop()


def test_a_kernel_s_exporter_serves_its_gpus_and_its_cells(kernel, tmp_path):
    port = free_port()
    assert text_of(kernel.run("%load_ext nbgpumon")).startswith("nbgpumon 0.1.0: watching 2")
    said = text_of(kernel.run(f"%gpumon export {port}"))
    assert said == f"nbgpumon: exporting on http://127.0.0.1:{port}/metrics\n"
    text = scrape(port)
    assert samples(text, "nbgpumon_gpu_memory_used_bytes") == [
        ({"gpu": "0", "UUID": "GPU-aaaa", "modelName": "Fake H200", "Hostname": HOST}, 3 * GIB),
        ({"gpu": "1", "UUID": "GPU-bbbb", "modelName": "Fake H200", "Hostname": HOST}, 5 * GIB),
    ]
    assert value(text, "nbgpumon_gpu_memory_total_bytes", gpu="1") == 141 * GIB
    assert value(text, "nbgpumon_running_cell") == 0

    # a cell that runs until the test says so: while it runs, the gauge names it
    go = tmp_path / "go"
    waiting = kernel.submit(
        "import pathlib, time\n"
        "_deadline = time.monotonic() + 60\n"
        f"while not pathlib.Path({str(go)!r}).exists() and time.monotonic() < _deadline:\n"
        "    time.sleep(0.01)\n"
    )
    seen = until(lambda: value(scrape(port), "nbgpumon_running_cell"), "a running cell")
    go.touch()
    (started,) = [m for m in kernel.wait(waiting) if m["msg_type"] == "execute_input"]
    count = started["content"]["execution_count"]  # the cell's In[N]
    assert seen == count
    error = kernel.run("1/0")
    assert any(m["msg_type"] == "error" for m in error)

    def with_the_error() -> str | None:
        # a quiet cell's record is made just after its reply (issue 43): a scrape may come first
        text = scrape(port)
        by_status = {labels["status"]: v for labels, v in samples(text, "nbgpumon_cells_total")}
        return text if by_status.get("error") else None

    text = until(with_the_error, "a scrape that counts the cell that raised")
    assert value(text, "nbgpumon_running_cell") == 0
    by_status = {labels["status"]: v for labels, v in samples(text, "nbgpumon_cells_total")}
    # the export cell and the waiting one ran fine (the %load_ext cell came before the ledger)
    assert by_status == {"ok": 2, "error": 1, "interrupted": 0, "oom": 0}
    assert value(text, "nbgpumon_last_cell_execution_count", Hostname=HOST) == count + 1
    duration = value(text, "nbgpumon_last_cell_duration_seconds")
    shown = text_of(
        kernel.run(
            "import nbgpumon\n"
            "print('RECORD', repr(nbgpumon.cells()[-1].duration), nbgpumon.cells()[-2].duration)"
        )
    )
    recorded, waited = shown.split()[1:]
    assert duration == float(recorded) and float(waited) > 0
    # no allocator ran: the last cell has no peak or kept bytes to export
    assert samples(text, "nbgpumon_last_cell_peak_bytes") == []
    status = text_of(kernel.run("%gpumon status")).splitlines()
    (line,) = [line for line in status if line.startswith("exporter: ")]
    served = SCRAPES[port]
    assert line == f"exporter: http://127.0.0.1:{port}/metrics, {served} scrapes served"

    said = text_of(kernel.run("%gpumon export off"))
    assert said == "nbgpumon: exporter stopped\n"
    assert port_is_free(port)
    assert "exporter:" not in text_of(kernel.run("%gpumon status"))


def test_export_alone_starts_on_the_default_port_or_says_where_it_serves(kernel):
    kernel.run("%load_ext nbgpumon")
    port = free_port()
    kernel.run(f"%config GPUMon.export_port = {port}")
    said = text_of(kernel.run("%gpumon export"))
    assert said == f"nbgpumon: exporting on http://127.0.0.1:{port}/metrics, 0 scrapes served\n"
    bad = text_of(kernel.run("%gpumon export 80 81"))
    assert bad == (
        "UsageError: usage: %gpumon export [PORT|off], PORT a number from 1 to 65535 "
        "(default 9476)\n"
    )
    bad = text_of(kernel.run("%config GPUMon.export_port = 70000"))
    assert bad.startswith("nbgpumon: GPUMon.export_port is 0 (off) or a port from 1 to 65535")
    assert samples(scrape(port), "nbgpumon_build_info")  # still serving where it was


def test_a_port_taken_in_a_kernel_is_one_line_in_the_cell_s_error_output(kernel):
    kernel.run("%load_ext nbgpumon")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = text_of(kernel.run(f"%gpumon export {port}"))
        assert said == (
            f"UsageError: port {port} on 127.0.0.1 is in use (another exporter?); "
            "%gpumon export PORT picks another\n"
        )
        said = text_of(kernel.run(f"%config GPUMon.export_port = {port}"))
        assert said.startswith(f"nbgpumon: port {port} on 127.0.0.1 is in use")
        assert len(said.splitlines()) == 1 and "Traceback" not in said
    assert (
        text_of(kernel.run("import nbgpumon; print(nbgpumon.monitor().config.export_port)"))
        == "0\n"
    )


def test_unload_and_reload_with_the_exporter_on_leave_one_server_at_most(kernel):
    port = free_port()
    for _ in range(3):
        kernel.run("%load_ext nbgpumon")
        assert "exporting on" in text_of(kernel.run(f"%gpumon export {port}"))
        assert samples(scrape(port), "nbgpumon_build_info")
        assert text_of(kernel.run(COUNT_EXPORTERS)) == "EXPORTERS 1\n"
        kernel.run("%unload_ext nbgpumon")
        assert text_of(kernel.run(COUNT_EXPORTERS)) == "EXPORTERS 0\n"
        assert port_is_free(port)
    kernel.run("%load_ext nbgpumon")
    kernel.run(f"%gpumon export {port}")
    # a reload goes on with the live settings: one exporter again, the new monitor's
    assert f"exporting on http://127.0.0.1:{port}/metrics" in text_of(
        kernel.run("%reload_ext nbgpumon")
    )
    assert text_of(kernel.run(COUNT_EXPORTERS)) == "EXPORTERS 1\n"
    assert samples(scrape(port), "nbgpumon_build_info")
    kernel.run("%gpumon export off")
    kernel.run("%reload_ext nbgpumon")
    assert text_of(kernel.run(COUNT_EXPORTERS)) == "EXPORTERS 0\n"
    assert port_is_free(port)
    with pytest.raises(urllib.error.URLError):
        scrape(port)
