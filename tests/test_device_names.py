"""Each GPU named by its physical identity in the text views: a cell's allocator figures on a
machine of several GPUs, per GPU it used (``gpu1 (cuda:0)``), in the summary line and the
cells table; one wording for a GPU the kernel cannot see."""

from __future__ import annotations

import dataclasses

from nbgpumon._api.monitor import Monitor
from nbgpumon._foundation.gpu_names import NOT_VISIBLE, cuda_label, gpu_label
from nbgpumon._ledger.records import AllocatorUsage, CellRecord, DeviceUsage
from nbgpumon._session.facts.session_data import Device
from nbgpumon._views.words.cell_summary import summary_line
from nbgpumon._views.words.cells_table import cells_table

from notebook_runner import fake_pynvml

GIB = 2**30


def _device(nvml: int, cuda: int | None, kept: int = 0, peak: int = 0) -> DeviceUsage:
    frameworks = () if cuda is None else (
        AllocatorUsage("torch", 0, kept, 0, kept, peak, True, peak),
    )  # fmt: skip
    measured = cuda is not None
    return DeviceUsage(
        index=nvml, cuda_index=cuda, name="Fake H200",
        allocated_before=0 if measured else None, allocated_after=kept if measured else None,
        reserved_before=0 if measured else None, reserved_after=kept if measured else None,
        device_used_before=GIB, device_used_after=GIB + kept,
        peak_allocated=peak if measured else None, peak_exact=True,
        allocated_total=peak if measured else None, util_mean=None, util_max=None,
        frameworks=frameworks,
    )  # fmt: skip


def _record(*devices: DeviceUsage) -> CellRecord:
    return CellRecord(
        index=0, kind="cell", execution_count=5, cell_id=None, label="x = ...", start=0.0,
        duration=0.5, status="ok", error="", devices=devices, rss_before=None,
        rss_after=None, rss_peak=None, rss_peak_exact=False,
    )  # fmt: skip


def test_one_wording_for_a_hidden_gpu_and_the_physical_identity_first():
    assert cuda_label(None) == NOT_VISIBLE == "not visible to this kernel"
    assert gpu_label(0, "NVIDIA H200", None) == "gpu0 NVIDIA H200 (not visible to this kernel)"
    assert gpu_label(1, "NVIDIA H200", 0) == "gpu1 NVIDIA H200 (cuda:0)"
    assert Device(1, "NVIDIA H200", cuda_index=0).label == "gpu1 NVIDIA H200 (cuda:0)"
    assert Device(0, "NVIDIA H200").cuda_label == NOT_VISIBLE


def test_tensors_on_both_gpus_show_each_gpus_own_peak_and_kept():
    record = _record(_device(0, 0, kept=GIB, peak=GIB), _device(1, 1, kept=2 * GIB, peak=3 * GIB))
    line = summary_line(record)
    assert "gpu0 (cuda:0): +1.0 GiB alloc, peak 1.0 GiB, kept 1.0 GiB" in line, line
    assert "gpu1 (cuda:1): +3.0 GiB alloc, peak 3.0 GiB, kept 2.0 GiB" in line, line
    table = cells_table([record]).text
    assert "gpu0 (cuda:0) 1.0 GiB; gpu1 (cuda:1) 3.0 GiB" in table, table  # peak
    assert "gpu0 (cuda:0) 1.0 GiB; gpu1 (cuda:1) 2.0 GiB" in table, table  # kept


def test_the_kernels_only_gpu_is_named_by_its_nvml_index_when_another_is_hidden():
    record = _record(_device(0, None), _device(1, 0, kept=GIB, peak=GIB))
    line = summary_line(record)
    assert line.startswith("[5] gpu1 (cuda:0): +1.0 GiB alloc, peak 1.0 GiB, kept 1.0 GiB"), line
    assert "gpu0" not in line  # the hidden GPU has no allocator figures of this kernel's
    assert "gpu1 (cuda:0) 1.0 GiB" in cells_table([record]).text


def test_a_gpu_left_untouched_is_not_listed_and_one_gpu_machines_read_as_before():
    both = _record(_device(0, 0, kept=GIB, peak=GIB), _device(1, 1))
    assert "gpu1" not in summary_line(both) and "gpu0 (cuda:0):" in summary_line(both)
    one = _record(_device(0, 0, kept=GIB, peak=GIB))
    assert summary_line(one).startswith("[5] +1.0 GiB alloc · peak 1.0 GiB · kept 1.0 GiB")
    idle = _record(_device(0, 0), _device(1, 1))  # nothing held anywhere: the totals
    assert summary_line(idle).startswith("[5] 0 B alloc · peak 0 B · kept 0 B"), summary_line(idle)


def test_several_frameworks_on_several_gpus_are_named_by_gpu_then_framework():
    torch_0 = AllocatorUsage("torch", 0, GIB, 0, GIB, GIB, True, GIB)
    jax_0 = AllocatorUsage("jax", 0, GIB, 0, GIB, GIB, True)
    gpu0 = dataclasses.replace(_device(0, 0, kept=GIB, peak=GIB), frameworks=(torch_0, jax_0))
    record = _record(gpu0, _device(1, 1, kept=GIB, peak=2 * GIB))
    line = summary_line(record)
    assert "gpu0 (cuda:0) torch: +1.0 GiB alloc, peak 1.0 GiB, kept 1.0 GiB" in line, line
    assert "gpu0 (cuda:0) JAX: peak 1.0 GiB, kept 1.0 GiB" in line, line
    assert "gpu1 (cuda:1) torch: +2.0 GiB alloc, peak 2.0 GiB, kept 1.0 GiB" in line, line
    table = cells_table([record]).text
    assert "gpu0 (cuda:0) torch 1.0 GiB · JAX 1.0 GiB; gpu1 (cuda:1) torch 2.0 GiB" in table


def test_the_widget_sends_each_gpus_cuda_label_and_again_when_the_mapping_changes(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpus = [{"name": "Fake A", "uuid": "GPU-aaaa"}, {"name": "Fake B", "uuid": "GPU-bbbb"}]
    mon = Monitor(nvml_module=fake_pynvml(devices=gpus))
    try:
        mon.stop()
        widget = mon.widget()
        labels = [(d["index"], d["cuda_index"], d["cuda_label"]) for d in widget.devices]
        assert labels == [(0, None, NOT_VISIBLE), (1, 0, "cuda:0")]
        mon._session.device_source.remap_cuda(
            ["GPU-bbbb", "GPU-aaaa"]
        )  # as torch's UUIDs would say: 1,0
        mon._publisher._publish_status()
        labels = [(d["index"], d["cuda_index"], d["cuda_label"]) for d in widget.devices]
        assert labels == [(0, 1, "cuda:1"), (1, 0, "cuda:0")]
    finally:
        mon.close()
