"""The static picture: what nbconvert, GitHub and Colab's fallback show."""

import xml.etree.ElementTree as ET

import numpy as np

from nbgpumon._sampling.timeline import Timeline
from nbgpumon._session.facts.session_data import Device
from nbgpumon._views.chart.svg import timeline_svg


def _timeline() -> Timeline:
    tl = Timeline(
        [
            "gpu0.nvml.mem_used",
            "gpu0.torch.reserved",
            "gpu0.torch.allocated",
            "gpu0.nvml.gpu_util",
            "gpu0.nvml.mem_util",
            "host.rss",
        ]
    )
    for i in range(50):
        tl.append(1000.0 + i, [i * 2**30, i * 2**29, None, 50.0, 10.0, 2**30])
    return tl


def test_the_picture_is_well_formed_svg_with_a_panel_per_metric_group():
    tl = _timeline()
    gpu = Device(0, "Fake GPU", cuda_index=0)
    svg = timeline_svg(tl.window(), tl.columns, [gpu], [(1010.0, 1020.0, "[3]")])
    root = ET.fromstring(svg)
    lines = list(root.iter("{http://www.w3.org/2000/svg}polyline"))
    assert len(lines) == 4  # used, reserved, GPU util, memory util (allocated is all missing)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "gpu0 Fake GPU (cuda:0): memory (GiB)" in texts and "[3]" in texts


def test_names_from_the_system_are_escaped_not_markup():
    tl = _timeline()
    gpu = Device(0, "<script>alert(1)</script>", cuda_index=0)
    svg = timeline_svg(tl.window(), tl.columns, [gpu])
    assert "<script>" not in svg
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "gpu0 <script>alert(1)</script> (cuda:0): memory (GiB)" in texts


def test_without_a_gpu_the_picture_shows_host_memory():
    tl = _timeline()
    root = ET.fromstring(timeline_svg(tl.window(), tl.columns, []))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[0] == "host: this kernel's resident memory (GiB)"


def test_downsampling_keeps_extremes_and_means():
    tl = Timeline(["a"], raw_capacity=1000)
    for i in range(1000):
        tl.append(float(i), [float(i % 10)])
    small = tl.window().downsample(100)
    assert len(small.times) == 100
    assert np.all(small.low[:, 0] == 0) and np.all(small.high[:, 0] == 9)
    assert np.allclose(small.mean[:, 0], 4.5)


def test_a_gpu_hidden_from_the_kernel_is_titled_by_its_physical_identity():
    tl = Timeline(["gpu0.nvml.mem_used", "gpu1.nvml.mem_used", "gpu1.torch.allocated"])
    for i in range(10):
        tl.append(1000.0 + i, [2**30, 2**31, 2**30])
    devices = [Device(0, "Fake GPU", cuda_index=None), Device(1, "Fake GPU", cuda_index=0)]
    root = ET.fromstring(timeline_svg(tl.window(), tl.columns, devices))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "gpu0 Fake GPU (not visible to this kernel): memory (GiB)" in texts
    assert "gpu1 Fake GPU (cuda:0): memory (GiB)" in texts


def test_a_short_cells_label_gives_way_to_the_long_cell_that_follows_it():
    tl = _timeline()
    gpu = Device(0, "Fake GPU", cuda_index=0)
    # [2] lasts 3 ms and [3] starts right after it: one label each would print "[[2]3]"
    svg = timeline_svg(
        tl.window(), tl.columns, [gpu], [(1001.0, 1001.003, "[2]"), (1001.004, 1040.0, "[3]")]
    )
    texts = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert "[3]" in texts and "[2]" not in texts


def _classed(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{{http://www.w3.org/2000/svg}}{tag}") if e.get("class") == cls]


def test_a_mark_is_a_line_in_every_panel_and_its_label_is_text_once():
    tl = _timeline()
    gpu = Device(0, "Fake GPU", cuda_index=0)
    svg = timeline_svg(tl.window(), tl.columns, [gpu], marks=[(1020.0, "<b>x</b>")])
    assert "<b>" not in svg
    root = ET.fromstring(svg)
    panels = _classed(root, "g", "panel")
    assert len(panels) == 2  # memory, utilization
    assert len(_classed(root, "line", "mark")) == len(panels)
    assert [t.text for t in _classed(root, "text", "mark-label")] == ["<b>x</b>"]


def test_each_panel_has_round_ticks_in_its_own_unit_and_clock_ticks_under_it():
    tl = _timeline()  # memory up to 49 GiB; utilization in %
    root = ET.fromstring(timeline_svg(tl.window(), tl.columns, [Device(0, "Fake GPU")]))
    memory, util = _classed(root, "g", "panel")
    ticks = [t.text for t in _classed(memory, "text", "ytick")]
    assert ticks == ["0", "20", "40", "60"]  # GiB: the title says so
    assert [t.text for t in _classed(util, "text", "ytick")] == ["0", "20", "40", "60", "80", "100"]
    times = [t.text for t in _classed(util, "text", "xtick")]
    assert times == ["00:16:40", "00:16:50", "00:17:00", "00:17:10", "00:17:20"]  # UTC, 1000 s on
    assert [t.text for t in _classed(root, "text", "xtitle")] == ["time (UTC)"]


def test_a_long_mark_label_is_cut_to_fit_inside_the_picture():
    tl = _timeline()
    label = "a mark label far longer than any picture is wide " * 20
    root = ET.fromstring(timeline_svg(tl.window(), tl.columns, [], marks=[(1049.0, label)]))
    (text,) = _classed(root, "text", "mark-label")
    assert text.text == label[:59] + "…"
    half = 6.5 * len(text.text) / 2  # the label is centred on its x
    assert half <= float(text.get("x")) <= 720 - half
