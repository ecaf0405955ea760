"""The JAX and CuPy allocator sources, faked at the frameworks' boundary (tests/fake_frameworks.py):
what they read, when they refuse to read, and what the ledger makes of them beside torch; and
torch's counters as its source reads them from a fake torch."""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon import Monitor
from nbgpumon._forensics.release import Freed, MemoryNow
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._sources.cuda_contexts import CudaContexts
from nbgpumon._sources.frameworks.cupy.allocator import CupyAllocatorSource
from nbgpumon._sources.frameworks.jax.allocator import JaxAllocatorSource
from nbgpumon._sources.frameworks.torch.allocator import TorchAllocatorSource
from nbgpumon._views.memory.freed import freed_line
from nbgpumon._views.status.session_status import status_lines
from nbgpumon._views.words.cell_summary import summary_line
from nbgpumon._views.words.cells_table import cells_table

from fake_frameworks import GIB, FakeContexts, FakeCupy, FakeJaxClient, FakeJaxDevice, fake_jax
from notebook_runner import fake_pynvml

ONE_GPU = [{"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB}]


def install(monkeypatch, modules: dict) -> None:
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


# -- JAX ------------------------------------------------------------------------------------
def test_jax_is_not_read_until_its_backends_are_up(monkeypatch):
    source = JaxAllocatorSource()
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    assert not source.active() and source.status == "jax not imported"
    backends: dict = {}
    install(monkeypatch, fake_jax(backends))
    assert not source.active()
    assert source.status == "jax imported, no backend initialised yet (not read)"
    backends["cpu"] = FakeJaxClient([FakeJaxDevice(0, "cpu")])
    assert not source.active() and "active on cpu only" in source.status


def test_jax_gpu_devices_are_read_by_their_cuda_ordinal(monkeypatch):
    gpus = [FakeJaxDevice(0), FakeJaxDevice(1)]
    gpus[1].use(2 * GIB, pool=105 * GIB)
    gpus[1].stats["largest_free_block_bytes"] = 7 * GIB
    install(monkeypatch, fake_jax({"cpu": FakeJaxClient([]), "cuda": FakeJaxClient(gpus)}))
    source = JaxAllocatorSource()
    assert source.active()
    stats = source.read(1)
    assert (stats.allocated, stats.reserved, stats.peak_allocated) == (2 * GIB, 105 * GIB, 2 * GIB)
    assert stats.limit == 100 * GIB and stats.largest_free == 7 * GIB
    assert stats.allocated_total is None  # JAX counts no cumulative bytes
    assert source.read(5) is None and not source.reset_peak(1)


def test_jax_memory_stats_none_or_failing_is_a_status_not_an_exception(monkeypatch):
    gpu = FakeJaxDevice(0)
    install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    source = JaxAllocatorSource()
    gpu.stats = None
    assert source.read(0) is None and "returned nothing" in source.status
    gpu.stats = RuntimeError("INTERNAL: stream lost")
    assert source.read(0) is None and "stream lost" in source.status


def test_new_backends_after_clear_backends_are_found(monkeypatch):
    backends = {"cuda": FakeJaxClient([FakeJaxDevice(0)])}
    install(monkeypatch, fake_jax(backends))
    source = JaxAllocatorSource()
    assert source.read(0) is not None
    fresh = FakeJaxDevice(0)
    fresh.use(GIB)
    backends["cuda"] = FakeJaxClient([fresh])  # jax.clear_backends() and a new computation
    assert source.read(0).allocated == GIB


# -- CuPy -----------------------------------------------------------------------------------
def test_cupy_reads_only_devices_whose_context_is_up(monkeypatch):
    cupy = FakeCupy()
    install(monkeypatch, {"cupy": cupy})
    contexts = FakeContexts()
    source = CupyAllocatorSource(contexts, max_devices=2)
    assert not source.active() and "no CUDA context" in source.status
    assert source.read(0) is None and cupy.entered == []  # making a device current makes one
    contexts.up.add(1)
    cupy.malloc(1, GIB)
    assert source.active()
    stats = source.read(1)
    assert (stats.allocated, stats.reserved, stats.peak_allocated) == (GIB, GIB, None)
    assert source.read(0) is None and cupy.entered == [1]


def test_cupy_release_cache_frees_each_readable_pool_and_the_pinned_one(monkeypatch):
    cupy = FakeCupy()
    install(monkeypatch, {"cupy": cupy})
    source = CupyAllocatorSource(FakeContexts({0}), max_devices=2)
    cupy.malloc(0, 4 * GIB)
    cupy.free(0, 3 * GIB)
    source.release_cache()
    assert cupy.pool.freed == [0] and cupy.pinned.freed == 1
    assert source.read(0).reserved == GIB


def test_a_missing_cuda_driver_means_no_context_and_is_never_loaded():
    contexts = CudaContexts("libcuda-not-here.so.1")
    assert contexts.active(0) is False
    if not CudaContexts._loaded_driver(CudaContexts()):  # this machine: no CUDA driver loaded
        assert CudaContexts().active(0) is False
    with open("/proc/self/maps") as maps:
        assert "libcuda-not-here" not in maps.read()


# -- torch ----------------------------------------------------------------------------------
def _torch_stats(**counters: int) -> dict:
    """torch's nested memory stats as ``_cuda_memoryStats`` gives them, pool "all" only."""
    return {
        "allocated_bytes": {"all": {"current": 3, "peak": 9, "allocated": 40, "freed": 37}},
        "reserved_bytes": {"all": {"current": 20}},
        "active_bytes": {"all": {"current": 5}},
        "inactive_split_bytes": {"all": {"current": 2}},
        **counters,
    }


def test_torch_counters_are_read_alike_whether_or_not_torch_names_them_all(monkeypatch):
    # the read indexes torch's counters in place; a torch that lacks one gets 0 for it, the
    # others read as before
    answers = [_torch_stats(num_alloc_retries=4, num_ooms=1)]
    native = types.SimpleNamespace(
        _cuda_memoryStats=lambda index: answers[-1], _cuda_resetPeakMemoryStats=lambda index: None
    )
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True), _C=native)
    install(monkeypatch, {"torch": fake})
    source = TorchAllocatorSource()
    full = AllocatorStats(
        allocated=3, reserved=20, peak_allocated=9, allocated_total=40, alloc_retries=4, ooms=1,
        active=5, inactive_split=2,
    )  # fmt: skip
    assert source.read(0) == full and source.status == "ok"
    answers.append({k: v for k, v in answers[0].items() if k != "inactive_split_bytes"})
    assert source.read(0) == dataclasses.replace(full, inactive_split=0)


# -- the ledger with several frameworks -----------------------------------------------------
@pytest.fixture
def monitor(monkeypatch):
    mon = Monitor(nvml_module=fake_pynvml(devices=ONE_GPU))
    try:
        yield mon
    finally:
        mon.close()


def test_a_jax_cell_keeps_its_bytes_and_its_peak_is_exact_only_when_it_sets_a_high(
    monkeypatch, monitor
):
    gpu = FakeJaxDevice(0)
    install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    opened = monitor._session.ledger.begin("cell", "x = jnp.ones(...)", 1)
    gpu.use(3 * GIB)
    gpu.use(GIB)
    first = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    (jax,) = first.devices[0].frameworks
    assert (jax.framework, jax.allocated_delta, jax.peak_allocated, jax.peak_exact) == (
        "jax",
        GIB,
        3 * GIB,
        True,
    )
    assert summary_line(first).startswith("[1] peak 3.0 GiB · kept 1.0 GiB")
    opened = monitor._session.ledger.begin("cell", "y = x + 1", 2)
    gpu.use(2 * GIB)  # below the old high: JAX's counter can't say this cell's peak
    second = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    (jax,) = second.devices[0].frameworks
    assert jax.peak_exact is False and jax.peak_allocated == 2 * GIB
    assert summary_line(second).startswith("[2] peak ≥2.0 GiB · kept 1.0 GiB")


def test_a_cells_edges_ask_only_frameworks_imported_and_not_yet_up(monkeypatch, monitor):
    # a cell's edge pays for no framework the user never imported, nor asks again whether one
    # already seen up is up (its read checks that itself)
    asked: list[str] = []
    for name in ("torch", "jax", "cupy"):
        source = monitor._session.allocator(name)
        monkeypatch.setattr(source, "active", _counting(source.active, asked, name))
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    ledger = monitor._session.ledger
    ledger.add(ledger.end(ledger.begin("cell", "pass", 1)))
    assert "jax" not in asked and "cupy" not in asked
    gpu = FakeJaxDevice(0)
    install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    asked.clear()
    opened = ledger.begin("cell", "x = jnp.ones(...)", 2)
    gpu.use(GIB)
    record = ledger.add(ledger.end(opened))
    assert asked.count("jax") == 1  # asked at the start, seen up: not asked at the end
    assert record.devices[0].frameworks[0].allocated_delta == GIB
    asked.clear()
    opened = ledger.begin("cell", "del x", 3)
    gpu.use(0)
    record = ledger.add(ledger.end(opened))
    assert "jax" not in asked and record.devices[0].frameworks[0].allocated_delta == -GIB


def _counting(active, asked: list[str], name: str):
    def counted() -> bool:
        asked.append(name)
        return active()

    return counted


def test_a_cupy_cell_gets_an_exact_peak_from_the_hook_on_its_thread(monkeypatch, monitor):
    cupy = FakeCupy()
    install(monkeypatch, {"cupy": cupy})
    monitor._session.allocator("cupy")._contexts = FakeContexts({0})
    monitor.config.cupy_peak_hook = True
    cupy.malloc(0, GIB)  # before the cell: kept from earlier
    opened = monitor._session.ledger.begin("cell", "y = cp.ones(...)", 3)
    assert len(cupy.hooks) == 1  # armed on this thread when the cell began
    cupy.malloc(0, 2 * GIB)
    cupy.free(0, 2 * GIB)
    cupy.malloc(0, GIB)
    record = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    (usage,) = record.devices[0].frameworks
    assert usage.framework == "cupy" and usage.peak_exact
    assert (usage.allocated_before, usage.allocated_after, usage.peak_allocated) == (
        GIB,
        2 * GIB,
        3 * GIB,
    )
    monitor.close()
    assert cupy.hooks == []  # unloading disarms it


def test_by_default_a_cupy_peak_is_sampled_and_no_hook_slows_its_allocations(monkeypatch, monitor):
    cupy = FakeCupy()
    install(monkeypatch, {"cupy": cupy})
    monitor._session.allocator("cupy")._contexts = FakeContexts({0})
    opened = monitor._session.ledger.begin("cell", "t = cp.ones(...); del t", 5)
    cupy.malloc(0, 2 * GIB)
    cupy.free(0, 2 * GIB)
    record = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    assert cupy.hooks == []
    (usage,) = record.devices[0].frameworks
    assert usage.peak_exact is False and usage.retained == 0
    assert "peak ≥" in summary_line(record)
    status = "\n".join(status_lines(monitor.data.status()))
    assert "%config GPUMon.cupy_peak_hook = True makes them exact" in status
    monitor.config.cupy_peak_hook = True
    monitor._session.ledger.add(
        monitor._session.ledger.end(monitor._session.ledger.begin("cell", "pass", 6))
    )
    assert len(cupy.hooks) == 1
    monitor.config.cupy_peak_hook = False  # off again: disarmed at once
    assert cupy.hooks == []


def test_torch_jax_and_cupy_in_one_cell_each_get_their_own_figures(monkeypatch, monitor):
    gpu = FakeJaxDevice(0)
    cupy = FakeCupy()
    install(monkeypatch, {**fake_jax({"cuda": FakeJaxClient([gpu])}), "cupy": cupy})
    monitor._session.allocator("cupy")._contexts = FakeContexts({0})
    opened = monitor._session.ledger.begin("cell", "both()", 4)
    gpu.use(GIB)
    cupy.malloc(0, 2 * GIB)
    record = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    assert record.frameworks == ["jax", "cupy"]
    line = summary_line(record)
    # CuPy without its hook: a sampled lower bound
    assert line.startswith(
        "[4] JAX: peak 1.0 GiB, kept 1.0 GiB · CuPy: peak ≥2.0 GiB, kept 2.0 GiB"
    )
    assert record.retained == 3 * GIB
    table = cells_table([record]).text
    assert "JAX 1.0 GiB · CuPy 2.0 GiB" in table
    status = "\n".join(status_lines(monitor.data.status()))
    assert "JAX: active: cuda:0 1.0 GiB in use" in status
    assert "CuPy: active: cuda:0 2.0 GiB in use, 2.0 GiB reserved" in status
    assert "torch: not imported" in status or "torch: CUDA not initialised" in status


def test_free_says_when_only_an_allocators_idle_cache_came_back():
    before = MemoryNow(allocated=GIB, reserved=3 * GIB, rss=None)
    after = MemoryNow(allocated=GIB, reserved=GIB, rss=None)
    line = freed_line(Freed(before, after, (), 0))
    assert line.startswith("nbgpumon free: no output, _ or stored traceback held")
    assert line.endswith(
        "unused cache given back to the driver: GPU: allocated 0 B, reserved \u22122.0 GiB"
    )
    assert freed_line(Freed(after, after, (), 0)).endswith("(your variables are never touched)")


def test_a_recording_keeps_each_framework_and_an_older_one_reads_as_torch(
    tmp_path, monkeypatch, monitor
):
    gpu = FakeJaxDevice(0)
    install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    path = tmp_path / "run.sqlite"
    monitor.record(path)
    with monitor.track("load the embeddings"):
        gpu.use(GIB)
    monitor.record(None)
    (record,) = nbgpumon.load(path).records
    (jax,) = record.devices[0].frameworks
    assert (jax.framework, jax.retained, jax.peak_exact) == ("jax", GIB, True)
    frame = nbgpumon.load(path).cells_frame()
    assert frame["gpu0.jax.retained"].tolist() == [GIB]
    older = nbgpumon.load(Path(__file__).parent / "data" / "recorded-v1-h200.sqlite").records
    measured = [r for r in older if r.devices and r.devices[0].allocated_after is not None]
    assert measured and all(r.frameworks == ["torch"] for r in measured)
    first = measured[0].devices[0]
    assert first.frameworks[0].allocated_after == first.allocated_after


def test_with_several_frameworks_up_a_cell_shows_the_ones_it_changed_by_name(monkeypatch, monitor):
    # as on the H200: torch and JAX hold arrays from earlier cells, CuPy allocates in this one
    gpu = FakeJaxDevice(0)
    cupy = FakeCupy()
    install(monkeypatch, {**fake_jax({"cuda": FakeJaxClient([gpu])}), "cupy": cupy})
    monitor._session.allocator("cupy")._contexts = FakeContexts({0})
    gpu.use(GIB)
    opened = monitor._session.ledger.begin("cell", "c = cp.random.rand(...)", 6)
    cupy.malloc(0, 4 * GIB)
    cupy.free(0, 3 * GIB)
    record = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    line = summary_line(record)
    # the 4 GiB the pool took (and keeps cached) is why NVML grew by more than the 1 GiB kept
    assert line.startswith("[6] CuPy: peak ≥1.0 GiB, pool +4.0 GiB, kept 1.0 GiB · "), line
    assert "JAX" not in line  # it holds 1 GiB, but this cell did nothing with it
    row = cells_table([record]).text.splitlines()[1]
    assert "CuPy ≥1.0 GiB" in row and "JAX" not in row
    opened = monitor._session.ledger.begin("cell", "%gpumon free", 7)
    idle = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    assert "JAX" not in summary_line(idle) and "CuPy" not in summary_line(idle)


def test_a_value_carried_from_before_the_cell_is_no_sampled_peak_of_it(monkeypatch, monitor):
    # Between reads the timeline carries an allocator's last value: the rows just after a
    # cell starts may still show the previous cell's 5 GiB. They are not this cell's peak.
    gpu = FakeJaxDevice(0)
    gpu.use(5 * GIB)
    gpu.use(GIB)  # the earlier cell freed 4 GiB; JAX's peak counter stays at 5 GiB
    install(monkeypatch, fake_jax({"cuda": FakeJaxClient([gpu])}))
    columns = monitor.timeline.columns
    row = [None] * len(columns)

    def sample(t: float, jax_allocated: int) -> None:
        row[columns.index("gpu0.jax.allocated")] = jax_allocated
        monitor.timeline.append(t, row)

    opened = monitor._session.ledger.begin("cell", "y = x + 1", 8)
    start = opened.start
    sample(start + 0.1, 5 * GIB)  # carried: read during the previous cell
    sample(start + 0.7, GIB)  # the first read inside this cell, and the ones after it
    sample(start + 1.2, 2 * GIB)
    monkeypatch.setattr("nbgpumon._ledger.ledger.wall_clock", lambda: start + 1.5)
    record = monitor._session.ledger.add(monitor._session.ledger.end(opened))
    (jax,) = record.devices[0].frameworks
    assert (jax.peak_allocated, jax.peak_exact) == (2 * GIB, False)
