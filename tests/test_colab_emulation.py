"""Colab, emulated at the kernel's boundary (tests/colab_emulation/colab_kernel.py: a fake
``google.colab.output``, and every display or widget message sent from a thread other than the
main one dropped): ``%gpumon`` is the picture, says why in one line, and loses nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from notebook_runner import run_cells

EMULATION = Path(__file__).parent / "colab_emulation" / "colab_kernel.py"
COUNTS = (
    "import google.colab.output as _o\n"
    "print('DROPPED=' + str(dict(_o.dropped)))\n"
    "print('MANAGER=' + str(_o.custom_widget_manager_calls))"
)


def _colab_kernel_env(tmp_path: Path) -> dict[str, str]:
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(EMULATION, startup / "00-colab.py")
    return {"IPYTHONDIR": str(tmp_path / "ipython")}


def _picture(outputs: list) -> dict:
    [shown] = [o for o in outputs if o.get("output_type") == "display_data"]
    return shown["data"]


def test_in_colab_gpumon_is_the_picture_with_one_line_saying_why_and_catches_up_after_cells(
    tmp_path,
):
    runs = run_cells(
        [
            COUNTS,
            "%load_ext nbgpumon\nimport numpy as np, time  # numpy's memory: not cell [4]'s",
            "%gpumon",
            "keep = np.ones(2**24)  # 128 MiB\ntime.sleep(2.5)",
            "x = 1  # <img src=x onerror=alert(1)>",
            COUNTS,
        ],
        env=_colab_kernel_env(tmp_path),
    )
    for run in runs:
        assert run.error is None, run.text
    assert runs[0].stdout == "DROPPED={}\nMANAGER=0\n"  # the emulation is in, nothing sent yet
    show = runs[2]
    notes = [line for line in show.stdout.splitlines() if line.startswith("nbgpumon:")]
    assert notes == [
        "nbgpumon: in Colab the chart is a picture (%gpumon --static), redrawn after every "
        "cell: Colab does not show widget updates sent from a background thread"
    ]
    picture = _picture(show.outputs)
    assert "application/vnd.jupyter.widget-view+json" not in picture  # no widget to stay blank
    # The saved output is the picture as the main thread last redrew it, after cell [5]:
    # the 128 MiB cell [4] is in its band and its summary, though every redraw that the
    # sampler's thread sent while [4] ran was dropped.
    # (128 MiB kept and the cell's own churn: 120-140 MiB in all)
    assert re.search(r"^\[4\] host \+1[23]\d(\.\d)? MiB", picture["text/plain"], re.M), picture
    assert ">[4]</text>" in picture["image/svg+xml"]
    assert "<img" not in picture["text/html"].replace("&lt;img", "")
    counts = runs[5].stdout
    assert re.search(r"'update_display_data': [1-9]", counts), counts  # the thread's redraws
    assert "MANAGER=0" in counts  # nbgpumon made no widget, so anywidget never asked for it


def test_in_colab_the_live_widget_asked_for_by_name_turns_on_colabs_custom_widget_manager(
    tmp_path,
):
    runs = run_cells(
        ["%load_ext nbgpumon", "import nbgpumon\nnbgpumon.monitor().widget()", COUNTS],
        env=_colab_kernel_env(tmp_path),
    )
    assert runs[1].error is None, runs[1].text
    assert "application/vnd.jupyter.widget-view+json" in _picture_or_result(runs[1].outputs)
    assert "MANAGER=1" in runs[2].stdout  # anywidget's own call, as in Colab itself


def _picture_or_result(outputs: list) -> dict:
    [shown] = [o for o in outputs if o.get("output_type") in ("display_data", "execute_result")]
    return shown["data"]
