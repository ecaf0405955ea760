"""The cluster source: other nodes' GPUs read from a real Prometheus server on loopback, which
scrapes recorded DCGM-exporter text for two "nodes"; and the faults a server can have."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.errors import UsageError
from nbgpumon._foundation.metrics import node_of
from nbgpumon._session.config import GPUMon
from nbgpumon._session.session import Session
from nbgpumon._sources.base import RemotePhase
from nbgpumon._sources.cluster_series import reading_from
from nbgpumon._sources.prometheus import check_match, gpu_query
from nbgpumon._sources.prometheus_http import PrometheusClient, Series, shown_url
from nbgpumon._views.status.cluster import cluster_lines, cluster_read_line, cluster_status

from prometheus_server import (
    WAIT_FOR_THREE_HOSTS,
    FakeApi,
    PrometheusServer,
    TextTarget,
    free_port,
)
from waiting import until

DCGM_TEXT = (Path(__file__).parent / "data" / "dcgm-two-nodes.prom").read_text()
MIB = 2**20


def series_of(text: str) -> list[Series]:
    """Exposition text as the series an instant query would answer with."""
    return [
        Series({**sample.labels, "__name__": sample.name}, ((1.0, sample.value),))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def column(host: str, gpu: str, name: str) -> str:
    return f"node:{host}.{gpu}.{name}"


# -- what the series say ---------------------------------------------------------------------
def test_dcgm_series_become_bytes_percent_watts_and_celsius_per_host_and_gpu():
    reading = reading_from(1.0, series_of(DCGM_TEXT))
    v = reading.values
    assert v[column("node-a", "gpu0", "mem_used")] == 40960 * MIB
    # the total is used + free + reserved, as nvidia-smi counts it
    assert v[column("node-a", "gpu0", "mem_total")] == (40960 + 40000 + 599) * MIB
    assert v[column("node-a", "gpu0", "gpu_util")] == 87
    assert v[column("node-a", "gpu0", "power")] == 612.5
    assert v[column("node-a", "gpu0", "temperature")] == 61
    assert v[column("node-b", "gpu1", "mem_used")] == 30000 * MIB
    # MIG instances are GPUs of their own, with their profile
    assert v[column("node-b", "gpu0-mig1", "mem_used")] == 9984 * MIB
    assert v[column("node-b", "gpu0-mig2", "mem_total")] == (19472 + 512) * MIB
    assert reading.gpus[("node-b", "gpu0-mig2")]["mig_profile"] == "3g.20gb"
    pod = reading.gpus[("node-a", "gpu0")]
    assert (pod["pod"], pod["namespace"], pod["origin"]) == ("train-llm-0", "research", "dcgm")
    assert pod["model"] == "NVIDIA H100 80GB HBM3"
    assert sorted(reading.gpus) == [
        ("node-a", "gpu0"), ("node-a", "gpu1"),
        ("node-b", "gpu0-mig1"), ("node-b", "gpu0-mig2"), ("node-b", "gpu1"),
    ]  # fmt: skip


def test_nbgpumon_series_are_read_back_and_dcgm_wins_where_both_report_a_gpu():
    labels = {"gpu": "0", "Hostname": "node-a", "UUID": "GPU-1", "modelName": "H100"}
    ours = [
        Series({**labels, "__name__": "nbgpumon_gpu_memory_used_bytes"}, ((1.0, 5e9),)),
        Series({**labels, "__name__": "nbgpumon_gpu_utilization_ratio"}, ((1.0, 0.25),)),
        Series(
            {**labels, "__name__": "nbgpumon_allocator_allocated_bytes", "framework": "torch"},
            ((1.0, 3e9),),
        ),
        Series(
            {**labels, "__name__": "nbgpumon_allocator_allocated_bytes", "framework": "jax"},
            ((1.0, 1e9),),
        ),
        Series({"gpu": "0", "Hostname": "node-c", "__name__": "nbgpumon_gpu_utilization_ratio"},
               ((1.0, 0.5),)),
    ]  # fmt: skip
    reading = reading_from(1.0, [*ours, *series_of(DCGM_TEXT)])
    v = reading.values
    assert v[column("node-a", "gpu0", "mem_used")] == 40960 * MIB  # DCGM's, not nbgpumon's
    assert v[column("node-a", "gpu0", "gpu_util")] == 87
    assert v[column("node-a", "gpu0", "allocated")] == 4e9  # torch + JAX
    assert v[column("node-c", "gpu0", "gpu_util")] == 50  # a ratio, shown as percent
    assert reading.gpus[("node-c", "gpu0")]["origin"] == "nbgpumon"


def test_a_series_without_hostname_is_grouped_by_its_scrape_target_host():
    s = Series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "3", "instance": "gpu-7:9400"},
               ((1.0, 12.0),))  # fmt: skip
    assert reading_from(1.0, [s]).values == {column("gpu-7", "gpu3", "gpu_util"): 12.0}


def test_another_label_can_name_the_node():
    s = Series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "dcgm-exporter-x7k2p",
                "kubernetes_node": "gpu-node-3"}, ((1.0, 5.0),))  # fmt: skip
    assert list(reading_from(1.0, [s], "kubernetes_node").values) == [
        column("gpu-node-3", "gpu0", "gpu_util")
    ]
    assert list(reading_from(1.0, [s]).values) == [
        column("dcgm-exporter-x7k2p", "gpu0", "gpu_util")
    ]


def test_the_cluster_timeline_keeps_a_bounded_number_of_gpus_and_says_how_many_it_left_out():
    from nbgpumon._sampling.node_timeline import NodeTimeline

    nodes = NodeTimeline(max_gpus=4)
    reading = reading_from(1.0, series_of(DCGM_TEXT))  # 5 GPUs
    nodes.add(reading)
    assert len(nodes.gpus()) == 4 and nodes.refused_gpus == 1
    assert {node_of(c) for c in nodes.columns} == set(nodes.gpus())
    nodes.add(type(reading)(2.0, reading.values, reading.gpus))  # the same answer again
    assert nodes.cursor == 2 and len(nodes.columns) == len(set(nodes.columns))
    nodes.add(type(reading)(1.5, reading.values, reading.gpus))  # older than the last: dropped
    assert nodes.cursor == 2


def test_label_matchers_are_checked_before_they_reach_the_server():
    assert check_match(' Hostname=~"node-1.*" , job="dcgm"') == 'Hostname=~"node-1.*" , job="dcgm"'
    assert gpu_query('job="dcgm"').endswith(', job="dcgm"}')
    for bad in ['Hostname="a"} or vector(1) {', "node-1", 'Hostname=~"a" job="b"', '="x"']:
        with pytest.raises(ValueError, match="label matchers"):
            check_match(bad)


def test_the_scrape_interval_comes_from_the_targets_else_from_the_configuration():
    api = FakeApi()
    try:
        client = PrometheusClient(api.url)
        api.targets = [{"scrapeInterval": "30s"}, {"scrapeInterval": "1m"}]
        assert client.scrape_interval() == 30
        api.targets = []  # a server just started lists no target for a few seconds
        api.config_yaml = (
            "global:\n  scrape_interval: 15s\nscrape_configs:\n- job_name: dcgm\n"
            "  scrape_interval: 5s\n"
        )
        assert client.scrape_interval() == 5
        api.config_yaml = "global:\n  evaluation_interval: 1m\n"
        assert client.scrape_interval() is None
    finally:
        api.close()


def test_a_url_with_credentials_is_shown_without_them():
    assert shown_url("http://me:secret@prom.example:9090/") == "http://prom.example:9090"
    client = PrometheusClient("http://me:secret@prom.example:9090")
    assert "secret" not in client.url


# -- a real Prometheus -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def dcgm_target():
    target = TextTarget(DCGM_TEXT)
    yield target
    target.close()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory, dcgm_target):
    server = PrometheusServer(
        tmp_path_factory.mktemp("prometheus"), {"dcgm": [dcgm_target.address]}
    )
    server.start()
    server.wait_for_series("DCGM_FI_DEV_FB_USED", 5)
    yield server
    server.stop()


def session(**settings) -> Session:
    config = GPUMon(**{"interval": 0.05, "cluster_timeout": 1.0, **settings})
    s = Session(config)
    s.start()
    return s


def read(s: Session, *args, **kwargs) -> str:
    """What ``%gpumon cluster`` says of reading (or stopping) the cluster."""
    return cluster_read_line(s.cluster_control.read(*args, **kwargs))


def status(s: Session) -> str:
    """The cluster's status line, as ``%gpumon status`` says it."""
    return cluster_status(s.data.cluster.state)


def test_a_real_prometheus_server_s_nodes_arrive_with_their_numbers(prometheus):
    s = session()
    try:
        line = read(s, prometheus.url)
        assert line == f"cluster: 2 nodes, 5 GPUs from {prometheus.url}, every 1 s"
        cluster = s.data.cluster
        until(lambda: cluster.cursor > 0, "the first rows in the cluster timeline", 10)
        latest = cluster.latest()
        assert latest[column("node-a", "gpu0", "mem_used")] == 40960 * MIB
        assert latest[column("node-b", "gpu1", "gpu_util")] == 45
        assert [n.host for n in cluster.nodes()] == ["node-a", "node-b"]
        assert [g.gpu for g in cluster.nodes()[1].gpus] == ["gpu0-mig1", "gpu0-mig2", "gpu1"]
        text = "\n".join(cluster_lines(cluster, per_gpu=True))
        assert "node-a: 2 GPUs, 41.0 GiB of 159 GiB used, utilization 44% (max 87%)" in text
        assert "gpu0 NVIDIA H100 80GB HBM3: 40.0 GiB of 79.6 GiB, 87%, 612 W, 61 °C" in text
        assert "pod research/train-llm-0" in text
        assert "gpu0-mig1 NVIDIA A100-SXM4-40GB MIG 3g.20gb: 9.8 GiB of 19.5 GiB" in text
        # the recent past came with the first answer (a range query), then a row a second
        rows = cluster.cursor
        until(lambda: cluster.cursor >= rows + 2, "two more answers", 10)
        times = cluster.window().times
        assert (times[1:] > times[:-1]).all()
    finally:
        s.close()


def test_label_matchers_narrow_what_is_read(prometheus):
    s = session()
    try:
        line = read(s, prometheus.url, 'Hostname="node-b"')
        assert line.startswith("cluster: 1 node, 3 GPUs")
        assert s.config.prometheus_match == 'Hostname="node-b"'
        line = read(s, prometheus.url, 'Hostname="node-z"')
        assert "answers, but has no DCGM exporter or nbgpumon GPU series matching" in line
    finally:
        s.close()


def test_the_setting_starts_and_stops_reading(prometheus, capsys):
    mon = Monitor(GPUMon(interval=0.05, cluster_timeout=1.0))  # (it says what a %config did)
    mon.start()
    s = mon._session
    try:
        s.config.prometheus_url = prometheus.url
        assert "cluster: 2 nodes" in capsys.readouterr().out
        assert s.sampler.remote is not None
        s.config.prometheus_url = ""
        assert capsys.readouterr().out == f"nbgpumon: stopped reading {prometheus.url}\n"
        assert s.sampler.remote is None
        assert s.data.cluster.nodes()  # what was read stays readable
    finally:
        mon.close()


def test_a_bad_url_or_matcher_is_one_line_and_reading_goes_on(prometheus):
    s = session()
    try:
        read(s, prometheus.url)
        with pytest.raises(UsageError, match="is not a Prometheus server's address"):
            read(s, "prometheus:9090")
        with pytest.raises(UsageError, match="not a list of label matchers"):
            read(s, prometheus.url, "node-1")
        assert s.sampler.remote is not None and s.sampler.remote.url == prometheus.url
    finally:
        s.close()


# -- faults ----------------------------------------------------------------------------------
def gaps_while(s: Session, seconds: float) -> tuple[int, float]:
    """Rows the local timeline got over ``seconds`` and the longest gap between them."""
    start = time.time()
    cursor = s.timeline.cursor
    until(lambda: time.time() - start >= seconds, f"{seconds} s to pass", seconds + 5)
    times = s.timeline.since(cursor).times
    gaps = times[1:] - times[:-1]
    return len(times), float(gaps.max()) if len(gaps) else float("inf")


def test_a_server_that_stops_mid_run_is_a_status_and_reading_resumes_when_it_is_back(
    tmp_path, dcgm_target
):
    server = PrometheusServer(tmp_path, {"dcgm": [dcgm_target.address]}).start()
    server.wait_for_series("DCGM_FI_DEV_FB_USED", 5)
    s = session(idle_interval=0)  # (every tick at the interval: counted)
    try:
        assert read(s, server.url).startswith("cluster: 2 nodes")
        server.stop()
        until(lambda: "connection refused" in status(s), "the status to say so", 10)
        assert status(s) == (
            f"Prometheus at {server.url}: connection refused (is the server running?); "
            "trying again every 1 s"
        )
        rows, gap = gaps_while(s, 2.0)
        assert rows >= 15 and gap < 1.0  # ticks every 0.05 s went on
        server.start()  # the same port, the same storage
        until(lambda: status(s).startswith("2 nodes"), "reading to resume", 30)
    finally:
        s.close()
        server.stop()


def test_a_slow_server_never_stalls_a_tick():
    api = FakeApi()
    api.mode = "slow"
    s = session(cluster_timeout=1.5, idle_interval=0)  # (every tick at the interval: counted)
    try:
        started = time.monotonic()
        line = read(s, api.url)
        assert time.monotonic() - started < 5  # it waited for the first answer, then said so
        assert line == f"cluster: reading {api.url}; no answer yet (%gpumon status says when)" or (
            "no answer within 1.5 s" in line
        )
        until(lambda: "no answer within 1.5 s" in status(s), "the timeout status", 15)
        rows, gap = gaps_while(s, 2.0)  # while the worker waits on the server
        assert rows >= 15 and gap < 1.0
        api.mode = "good"
        until(lambda: "answers, but has no" in status(s), "recovery", 15)
    finally:
        s.close()
        api.close()


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("500", "HTTP 500 Internal Server Error: storage is on fire"),
        ("garbage", "the answer is not JSON (is this a Prometheus server?)"),
    ],
)
def test_a_server_answering_errors_or_garbage_is_a_status_line(mode, says):
    api = FakeApi()
    api.mode = mode
    # it can't learn the scrape interval from this server; every tick at the interval: counted
    s = session(cluster_interval=1, idle_interval=0)
    try:
        line = read(s, api.url)
        assert says in line
        assert status(s) == f"Prometheus at {api.url}: {says}; trying again every 1 s"
        rows, gap = gaps_while(s, 1.0)
        assert rows >= 8 and gap < 1.0
        assert s.data.cluster.cursor == 0  # nothing made up
        api.mode = "good"
        until(lambda: "answers, but has no" in status(s), "recovery", 15)
    finally:
        s.close()
        api.close()


def test_close_stops_the_worker_even_while_a_request_hangs():
    api = FakeApi()
    api.mode = "slow"
    s = session(cluster_timeout=10)
    try:
        read(s, api.url, wait=0)
        until(lambda: api.requests >= 1, "the request to hang", 10)
        source = s.sampler.remote
        started = time.monotonic()
        s.close()
        assert time.monotonic() - started < 2.5
        assert s.sampler.remote is None and source.state.phase == RemotePhase.STOPPED
    finally:
        api.close()
        until(lambda: not source.running, "the worker to end with its request", 15)


# -- the recording ---------------------------------------------------------------------------
def test_a_recording_keeps_the_nodes_and_loads_them_back(prometheus, tmp_path):
    from nbgpumon._api.recorded import load_recorded

    s = session()
    path = tmp_path / "run.sqlite"
    try:
        s.record(path)
        read(s, prometheus.url)
        until(
            lambda: s.recording_control.writer.node_rows_written >= 10, "node rows in the file", 20
        )
    finally:
        s.close()
    live = s.data.cluster
    recorded = load_recorded(path).cluster
    assert recorded.url == prometheus.url
    assert [n.host for n in recorded.nodes()] == ["node-a", "node-b"]
    assert recorded.nodes()[0].gpus == live.nodes()[0].gpus  # model, UUID, pod, MIG profile
    assert recorded.cursor == live.cursor  # every answer since the recording began
    assert recorded.latest() == live.latest()
    page = load_recorded(path).report_html()  # the self-contained page lists them too
    assert "<h2>Other nodes</h2>" in page
    assert "<td>node-a</td><td>2 (NVIDIA H100 80GB HBM3)</td><td>41.0 GiB</td><td>44%</td>" in page


def test_the_report_draws_a_memory_and_a_utilization_line_per_node(prometheus):
    from nbgpumon._views.report.bqplot_report import report_widget

    s = session()
    try:
        read(s, prometheus.url)
        until(lambda: s.data.cluster.cursor >= 2, "two answers", 10)
        report = report_widget(s.data)
    finally:
        s.close()
    assert report.node_memory_figure in report.children
    assert report.node_util_figure in report.children
    memory = {m.labels[0]: m for m in report.node_memory_lines}
    assert sorted(memory) == ["node-a (2 GPUs)", "node-b (3 GPUs)"]
    # GiB: node-a's GPUs 40960 + 1024 MiB
    assert memory["node-a (2 GPUs)"].y[-1] == pytest.approx((40960 + 1024) / 1024)
    util = {m.labels[0]: m for m in report.node_util_lines}
    assert util["node-a (2 GPUs)"].y[-1] == pytest.approx((87 + 0) / 2)
    assert util["node-b (3 GPUs)"].y[-1] == pytest.approx(45)  # MIG instances report none
    assert "other nodes" in report.legend.value and "node-b (3 GPUs)" in report.legend.value


# -- in a real kernel ------------------------------------------------------------------------
def test_the_magic_reads_a_cluster_and_the_snapshot_status_and_listing_show_its_nodes(prometheus):
    from notebook_runner import fake_nvml_env, run_cells

    url = prometheus.url
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            f"%gpumon cluster {url} --match 'Hostname=~\"node-.*\"' --job dcgm",
            "%gpumon snapshot",
            "%gpumon status",
            "%gpumon cluster",
            "%config GPUMon.prometheus_match",
            "%gpumon cluster http://127.0.0.1:9 --match node-1",
            "%gpumon cluster off",
            "%gpumon cluster",
        ],
        env=fake_nvml_env(devices=[{"name": "NVIDIA H100 80GB HBM3"}]),
    )
    assert runs[1].stdout == f"nbgpumon: cluster: 2 nodes, 5 GPUs from {url}, every 1 s\n"
    node_a = "node-a: 2 GPUs, 41.0 GiB of 159 GiB used, utilization 44% (max 87%)"
    assert node_a in runs[2].text and "node-b: 3 GPUs" in runs[2].text
    assert f"cluster: 2 nodes, 5 GPUs from {url}, every 1 s" in runs[3].text
    assert node_a in runs[3].text
    listing = runs[4].text
    assert "gpu1 NVIDIA A100-SXM4-40GB: 29.3 GiB of 39.5 GiB, 45%, 250 W, 48 °C" in listing
    assert runs[5].text.strip() == '\'Hostname=~"node-.*", job="dcgm"\''
    assert runs[6].stderr.count("\n") == 1 and "not a list of label matchers" in runs[6].stderr
    assert runs[7].stdout == f"nbgpumon: stopped reading {url}\n"
    assert runs[8].text.startswith(f"cluster: stopped reading {url}\n  node-a")


THIS_HOST = socket.gethostname()
KERNEL_GPUS = [
    {"name": "Fake H200", "uuid": "GPU-aaaa", "used": 3 * 2**30, "total": 141 * 2**30,
     "util": 87, "temperature": 61, "power_mw": 412_500},
    {"name": "Fake H200", "uuid": "GPU-bbbb", "used": 5 * 2**30, "total": 141 * 2**30, "util": 3},
]  # fmt: skip


def test_a_kernel_s_exporter_and_two_dcgm_nodes_come_back_through_prometheus(tmp_path, dcgm_target):
    # (a) a real kernel's exporter and (b) recorded DCGM-exporter text for two other nodes,
    # both scraped by a real Prometheus; the same kernel reads the cluster back from it
    from notebook_runner import fake_nvml_env, run_cells

    port = free_port()
    targets = {"dcgm": [dcgm_target.address], "nbgpumon": [f"127.0.0.1:{port}"]}
    server = PrometheusServer(tmp_path, targets).start()
    try:
        runs = run_cells(
            [
                "%load_ext nbgpumon",
                f"%gpumon export {port}",
                f"%gpumon cluster {server.url}",
                WAIT_FOR_THREE_HOSTS,
                "%gpumon cluster",
            ],
            env=fake_nvml_env(devices=KERNEL_GPUS),
        )
    finally:
        server.stop()
    assert runs[3].stdout.strip() == f"HOSTS {sorted(['node-a', 'node-b', THIS_HOST])!r}"
    listing = runs[4].text
    assert f"  {THIS_HOST}: 2 GPUs, 8.0 GiB of 282 GiB used, utilization 45% (max 87%)" in listing
    assert "    gpu0 Fake H200: 3.0 GiB of 141 GiB, 87%, 412 W, 61 °C" in listing
    assert "  node-a: 2 GPUs, 41.0 GiB of 159 GiB used, utilization 44% (max 87%)" in listing
    assert "    gpu1 NVIDIA A100-SXM4-40GB: 29.3 GiB of 39.5 GiB, 45%, 250 W, 48 °C" in listing


COUNT_WORKERS = (
    "import threading\n"
    "print('WORKERS', len([t for t in threading.enumerate() if t.name == 'nbgpumon-prometheus']))"
)


def test_reload_and_unload_leave_one_cluster_worker_at_most():
    from notebook_runner import run_cells

    api = FakeApi()
    try:
        runs = run_cells(
            [
                "%load_ext nbgpumon",
                f"%gpumon cluster {api.url}",
                COUNT_WORKERS,
                "%reload_ext nbgpumon",
                f"%gpumon cluster {api.url}",
                "%reload_ext nbgpumon",
                COUNT_WORKERS,
                "%unload_ext nbgpumon",
                COUNT_WORKERS,
            ]
        )
    finally:
        api.close()
    assert runs[2].stdout.split() == ["WORKERS", "1"]
    # a reload goes on with the live settings: the new monitor reads the cluster, the old stops
    assert runs[6].stdout.split() == ["WORKERS", "1"]
    assert runs[8].stdout.split() == ["WORKERS", "0"]


def test_a_config_file_s_prometheus_url_starts_reading_at_load(prometheus, tmp_path):
    from notebook_runner import run_cells

    ipython_dir = tmp_path / "ipython"
    (ipython_dir / "profile_default").mkdir(parents=True)
    (ipython_dir / "profile_default" / "ipython_kernel_config.py").write_text(
        f"c.GPUMon.prometheus_url = {prometheus.url!r}\n"
        "c.GPUMon.prometheus_match = 'Hostname=\"node-a\"'\n"
    )
    wait = (
        "import time, nbgpumon\n_d = time.monotonic() + 30\n"
        "while not nbgpumon.monitor().data.cluster.nodes() and time.monotonic() < _d:\n"
        "    time.sleep(0.05)\n"
        "print('NODES', [n.host for n in nbgpumon.monitor().data.cluster.nodes()])"
    )
    runs = run_cells(["%load_ext nbgpumon", wait], env={"IPYTHONDIR": str(ipython_dir)})
    assert f"nbgpumon: cluster: reading {prometheus.url}; no answer yet" in runs[0].text
    assert runs[1].stdout.split() == ["NODES", "['node-a']"]
