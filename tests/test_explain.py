"""The breakdown of this kernel's GPU memory by what it is (``nbgpumon.explain()``, ``%gpumon
explain``): its arithmetic, a session's with NVML and JAX faked at their boundaries, and the
words in a real kernel."""

from __future__ import annotations

import sys

import pytest

from nbgpumon import Monitor, UsageError
from nbgpumon._forensics.explain import (
    CONTEXT,
    DRIVER,
    FRAMEWORKS,
    NOT_ANSWERING,
    NOT_LISTED,
    UNEXPLAINED,
    DriverBelow,
    Fragmented,
    NoProcessFigure,
    explain_device,
)
from nbgpumon._ledger.kinds_notes import ScanCut, ScanFoundMore
from nbgpumon._sources.base import AllocatorStats
from nbgpumon._views.memory.explain import explain_lines, measured_words

from fake_frameworks import GIB, FakeJaxClient, FakeJaxDevice, fake_jax
from notebook_runner import fake_nvml_env, fake_pynvml, run_cells
from waiting import until

MIB = 2**20


def _stats(allocated: int, reserved: int, inactive_split: int | None = None) -> AllocatorStats:
    return AllocatorStats(allocated, reserved, None, None, inactive_split=inactive_split)


def test_the_categories_add_up_to_the_drivers_figure_each_by_its_definition():
    found = {"optimizer state": 2 * GIB, "parameters": GIB, "gradients": GIB, "buffers": MIB}
    e = explain_device(
        0,
        0,
        found,
        {"torch": 4 * GIB + MIB},
        {"torch": _stats(5 * GIB, 6 * GIB, inactive_split=300 * MIB)},
        process_bytes=6 * GIB + 500 * MIB,
    )
    assert e.categories == {
        "parameters": GIB,
        "gradients": GIB,
        "optimizer state": 2 * GIB,
        "buffers": MIB,
        UNEXPLAINED: GIB - MIB,  # torch counts in use what nothing the scan reached holds
        "torch cache (reserved, unused)": GIB,
        CONTEXT: 500 * MIB,  # the driver's figure beyond every reserve
    }
    assert list(e.categories)[:4] == ["parameters", "gradients", "optimizer state", "buffers"]
    assert sum(e.categories.values()) == e.total == 6 * GIB + 500 * MIB
    assert e.measured == DRIVER and e.device == "cuda:0"
    assert e.notes == (Fragmented("torch", 300 * MIB),)
    lines = explain_lines([e])
    assert lines[1] == "gpu0 (cuda:0): 6.5 GiB, the driver's figure for this process"
    assert lines[-1] == (
        "  (torch: 300 MiB of its reserve is split blocks, too small for large requests "
        "(fragmentation))"
    )


def test_readings_that_disagree_are_said_never_a_negative_category():
    e = explain_device(
        1,
        0,
        {"arrays held by variables": 2 * GIB},
        {"torch": 2 * GIB},
        {"torch": _stats(GIB, GIB)},  # counted before the scan's tensors came
        process_bytes=GIB,
    )
    assert all(size > 0 for size in e.categories.values())
    assert e.categories == {"arrays held by variables": 2 * GIB}
    assert e.total == 2 * GIB == sum(e.categories.values())
    assert e.measured == FRAMEWORKS  # not the driver's 1 GiB
    assert e.notes == (ScanFoundMore("torch", GIB), DriverBelow(GIB, 2 * GIB))
    assert explain_lines([e])[1] == "gpu1 (cuda:0): 2.0 GiB, what the frameworks hold and reserve"
    assert explain_lines([e])[-2:] == [
        "  (the scan found 1.0 GiB more of torch's than it counts in use: read moments apart)",
        "  (the driver's figure for this process (1.0 GiB) is below what the frameworks hold "
        "and reserve (2.0 GiB): read moments apart)",
    ]


def test_a_scan_cut_short_is_a_note_in_the_scans_words():
    cut = ScanCut(0.05, 120_000)
    e = explain_device(0, 0, {}, {}, {"torch": _stats(GIB, GIB)}, GIB, partial=cut)
    assert e.notes == (cut,)
    assert explain_lines([e])[-1] == (
        "  (the scan stopped after 50 ms (120,000 objects looked at): some holders may be missing)"
    )


def test_without_the_drivers_figure_the_total_is_what_the_frameworks_hold_and_reserve():
    silent = NoProcessFigure(NOT_ANSWERING, "NVML")
    e = explain_device(0, 0, {}, {}, {"jax": _stats(GIB, 3 * GIB)}, None, silent)
    assert e.categories == {UNEXPLAINED: GIB, "JAX pool (reserved, unused)": 2 * GIB}
    assert e.total == 3 * GIB and e.no_figure == silent
    assert measured_words(e) == "what the frameworks hold and reserve: NVML not answering"
    unsaid = explain_device(0, 0, {}, {}, {"jax": _stats(GIB, GIB)}, None)
    assert measured_words(unsaid) == (
        "what the frameworks hold and reserve: no figure of the driver's for this process"
    )


@pytest.fixture
def jax_gpu(monkeypatch):
    gpu = FakeJaxDevice(0)
    for name, module in fake_jax({"cuda": FakeJaxClient([gpu])}).items():
        monkeypatch.setitem(sys.modules, name, module)
    return gpu


def test_a_session_explains_each_gpu_from_the_drivers_list_and_the_allocators(jax_gpu):
    jax_gpu.use(512 * MIB, pool=GIB)
    devices = [
        {"name": "Fake H200", "used": 3 * GIB, "total": 141 * GIB,
         "processes": [{"pid": "self", "used": 2 * GIB}, {"pid": 4242, "used": GIB}]},
    ]  # fmt: skip
    mon = Monitor(nvml_module=fake_pynvml(devices=devices))
    try:
        (gpu0,) = mon.explain()
        assert gpu0.categories == {
            UNEXPLAINED: 512 * MIB,  # JAX's arrays in use: no variable here holds one
            "JAX pool (reserved, unused)": 512 * MIB,
            CONTEXT: GIB,  # this process's figure beyond the pool; the other process's not
        }
        assert gpu0.total == 2 * GIB
        said = repr(mon.explain())
        lines = said.splitlines()
        assert lines[1] == "gpu0 (cuda:0): 2.0 GiB, the driver's figure for this process"
        assert "  JAX pool (reserved, unused)     512 MiB   25%  ████████" in lines, said
    finally:
        mon.close()


def test_no_gpu_is_one_line_that_says_what_to_do():
    mon = Monitor(nvml_module=fake_pynvml(devices=[]))
    try:
        with pytest.raises(UsageError, match=r"no GPU here .*%gpumon holders host"):
            mon.explain()
    finally:
        mon.close()


def test_in_a_kernel_explain_prints_the_breakdown_and_no_gpu_is_one_line():
    nvml = {"devices": [{"name": "Fake H200", "used": GIB, "total": 141 * GIB,
                         "processes": [{"pid": "self", "used": 600 * MIB}]}]}  # fmt: skip
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon explain",
            "import nbgpumon\nnbgpumon.explain()[0].total",
            "%gpumon explain 2",  # a cell with no framework up: no breakdown, in one line
            "%gpumon explain two",
        ],
        env=fake_nvml_env(**nvml),
    )
    assert runs[3].text.startswith("UsageError: cell [2] has no breakdown: no framework"), runs[3]
    assert runs[4].text.startswith("UsageError: usage: %gpumon explain [N]"), runs[4].text
    said = runs[1].text
    assert said.startswith("nbgpumon explain: this kernel's GPU memory by what it is"), said
    assert "gpu0 (cuda:0): 600 MiB, the driver's figure for this process" in said
    assert "  CUDA context and libraries     600 MiB  100%  " + "█" * 30 in said.splitlines(), said
    assert runs[2].text.strip() == str(600 * MIB)
    bare = run_cells(["%load_ext nbgpumon", "%gpumon explain"], env=fake_nvml_env(devices=[]))
    assert bare[1].text.startswith("UsageError: no GPU here"), bare[1].text
    assert "Traceback" not in bare[1].text


def test_the_html_is_one_stacked_bar_per_gpu_with_a_tip_per_category_and_the_words():
    import html

    from nbgpumon._views.memory.explain import explain_html, explain_text

    used = explain_device(
        0, 0, {"parameters": GIB}, {"torch": GIB}, {"torch": _stats(GIB, 2 * GIB)}, 3 * GIB
    )
    unused = explain_device(1, 1, {}, {}, {}, None, NoProcessFigure(NOT_LISTED, "NVML"))
    page = explain_html([used, unused])
    assert page.count('<div class="nbgpumon-explain">') == 1  # (nothing of this kernel's on gpu1)
    assert page.count("<span title=") == len(used.categories) == 3
    assert 'title="parameters: 1.0 GiB"' in page and "gpu0 (cuda:0): 3.0 GiB" in page
    assert page.endswith(f">{html.escape(explain_text([used, unused]))}</pre>")
    assert "gpu1 (cuda:1): nothing of this kernel's" in explain_text([used, unused]).splitlines()


def test_each_frameworks_arrays_are_a_category_of_their_own_in_words_and_bar():
    from nbgpumon._views.memory.explain import explain_html
    from nbgpumon._views.palette import ARRAYS_GREENS, CATEGORY_COLORS

    found = {
        "arrays held by variables (JAX)": 2 * GIB,
        "parameters": GIB,
        "arrays held by variables (torch)": GIB,
    }
    owners = {"torch": 2 * GIB, "jax": 2 * GIB}
    stats = {"torch": _stats(2 * GIB, 2 * GIB), "jax": _stats(2 * GIB, 2 * GIB)}
    e = explain_device(0, 0, found, owners, stats, 4 * GIB)
    # in the categories' order: parameters, then each framework's arrays as the walk found them
    assert list(e.categories) == [
        "parameters", "arrays held by variables (JAX)", "arrays held by variables (torch)",
    ]  # fmt: skip
    lines = explain_lines([e])
    assert any(line.startswith("  arrays held by variables (JAX)  ") for line in lines)
    # each its own green, by the plug-ins' order (torch's first), in the bar and its legend
    page = explain_html([e]).replace(" ", "")
    torch_green, jax_green = ARRAYS_GREENS[:2]
    assert f"background:{torch_green}" in page and f"background:{jax_green}" in page
    assert f"color:{CATEGORY_COLORS['parameters']}" in page


def test_the_out_of_memory_post_mortem_says_the_failing_devices_memory_by_kind():
    from nbgpumon._forensics.holder_scan import Holder, HolderScan
    from nbgpumon._forensics.postmortem import OomFacts
    from nbgpumon._views.memory.oom import report

    scan = HolderScan(
        "cuda:0",
        (Holder("opt (state)", 4 * GIB, 20, False), Holder("model", 2 * GIB, 10, False)),
        6 * GIB,
        100,
        0.01,
        None,
        categories={"cuda:0": {"parameters": 2 * GIB, "optimizer state": 4 * GIB}},
        frameworks={"cuda:0": {"torch": 6 * GIB}},
    )
    stats = {"torch": _stats(9 * GIB, 10 * GIB)}
    facts = OomFacts("[5]", "CUDA out of memory", GIB, 0, "GPU", 0, 80 * GIB, stats, scan, ())
    lines = report(facts).splitlines()
    by_kind = "  by kind: parameters 2.0 GiB · optimizer state 4.0 GiB · unexplained 3.0 GiB"
    assert lines[lines.index("  held by: opt (state) 4.0 GiB · model 2.0 GiB") + 1] == by_kind, (
        lines
    )


def test_each_cell_is_explained_at_its_end_and_peak_recorded_and_read_back(jax_gpu, tmp_path):
    """Through a session's cell pipeline (a stand-in shell, JAX faked at its boundary): each
    cell's end by kind in its record and its recording; explain(cell=N) for the ledger's and the
    file's; the one-line errors."""
    import nbgpumon
    from nbgpumon._ledger.records import TRANSIENT

    from fake_shell import shell_with

    shell = shell_with()
    mon = Monitor(nvml_module=fake_pynvml(devices=[{"name": "Fake H200", "used": GIB,
                                                    "total": 141 * GIB}]),
                  shell=lambda: shell)  # fmt: skip
    path = tmp_path / "run.sqlite"
    try:
        mon.record(str(path))
        pipeline = mon._session.cells_pipeline
        jax_gpu.use(0, pool=0)
        for n, (in_use, peak) in enumerate([(256 * MIB, 256 * MIB), (768 * MIB, GIB)], 1):
            opened = pipeline.begin(n, f"cell {n}")
            jax_gpu.use(peak, pool=2 * GIB)
            jax_gpu.use(in_use, pool=2 * GIB)  # (the fake's peak counter keeps ``peak``)
            shell.user_ns[f"x{n}"] = object()  # a name bound: the cell is read, not carried
            pipeline.end(opened, "ok", "", n, None)
        second = mon.explain(cell=2)
        (gpu0,) = second
        assert gpu0.categories == {
            UNEXPLAINED: 768 * MIB,
            "JAX pool (reserved, unused)": 1280 * MIB,
        }
        assert gpu0.total == 2 * GIB
        assert gpu0.kept == {UNEXPLAINED: 512 * MIB}
        assert gpu0.peak_categories == {UNEXPLAINED: 768 * MIB, TRANSIENT: 256 * MIB}
        assert gpu0.peak == GIB == sum(gpu0.peak_categories.values())
        lines = repr(second).splitlines()
        assert lines[0] == "nbgpumon explain [2]: the cell's GPU memory by what it is"
        assert "  kept since its start: +512 MiB unexplained" in lines, lines
        assert any(line.startswith("gpu0 (cuda:0) at its peak: 1.0 GiB") for line in lines)
        assert second._repr_html_().count('<div class="nbgpumon-explain">') == 2

        def recorded() -> bool:
            try:
                return len(nbgpumon.load(path).records) == 2
            except nbgpumon.RecordingError:
                return False

        until(recorded, "both cells in the file")
        assert list(nbgpumon.load(path).explain(2)) == list(second)
        with pytest.raises(UsageError, match=r"^no cell \[7\] in the ledger"):
            mon.explain(cell=7)
        with pytest.raises(UsageError, match="a cell's number"):
            mon.explain(cell="2")
    finally:
        mon.close()
