"""Colab's runtime, for real, under its front end's one known constraint.

The kernel is Colab's own: the Colab leg (scripts/legs/colab) runs these tests in a virtualenv
with Colab's pins and the real google.colab package, whose "python3" kernelspec starts
``google.colab._kernel.Kernel`` (Colab's Shell; google.colab.output imported at start; the
real ``enable_custom_widget_manager()``). What is emulated is only what Colab's closed front
end is known to do with a background thread's messages (colabtools#3373: widget updates and
displays from a thread do not show): tests/colab_emulation/colab_front_end.py, an IPython
startup file, drops every display, display update and comm message sent from a thread other
than the main one, and counts them. There: ``%gpumon`` is the picture, says why in one line,
and loses nothing; the widget asked for by name turns on Colab's custom widget manager.

Without google.colab (the main virtualenv) these are skipped: a fake of Colab's package would
test the fake.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from notebook_runner import COLAB_RUNTIME, run_cells

pytestmark = pytest.mark.skipif(
    not COLAB_RUNTIME,
    reason="needs Colab's runtime (google.colab and its kernel): scripts/legs/colab runs these",
)

EMULATION = Path(__file__).parent / "colab_emulation" / "colab_front_end.py"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# Colab's custom widget manager, as google.colab.output._widgets names it
MANAGER_URL = re.compile(
    r"^https://ssl\.gstatic\.com/colaboratory-static/widgets/colab-cdn-widget-manager/"
    r"[0-9a-f]+/manager\.min\.js$"
)
KERNEL = (
    "import sys\n"
    "print('SHELL=' + type(get_ipython()).__module__)\n"
    "print('OUTPUT=' + str('google.colab.output' in sys.modules))"
)
COUNTS = (
    "from google.colab.output import _widgets as _w\n"
    "print('DROPPED=' + str(dict(get_ipython().kernel.dropped_by_front_end)))\n"
    "print('MANAGER=' + str(_w._installed_url))"
)


def _front_end_env(tmp_path: Path) -> dict[str, str]:
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(EMULATION, startup / "00-colab-front-end.py")
    return {"IPYTHONDIR": str(tmp_path / "ipython")}


def _shown(outputs: list) -> dict:
    [shown] = [o for o in outputs if o.get("output_type") in ("display_data", "execute_result")]
    return shown


def test_in_colab_gpumon_is_the_picture_with_one_line_saying_why_and_catches_up_after_cells(
    tmp_path,
):
    runs = run_cells(
        [
            KERNEL,
            COUNTS,
            "%load_ext nbgpumon\nimport numpy as np, time  # numpy's memory: not cell [5]'s",
            "%gpumon",
            # 128 MiB, then a wait (with a deadline) for the sampler's thread to redraw the
            # picture while the cell runs: a redraw the front end drops
            "keep = np.ones(2**24)  # 128 MiB\n_d = time.monotonic() + 60\n"
            "while not get_ipython().kernel.dropped_by_front_end['update_display_data']"
            " and time.monotonic() < _d:\n    time.sleep(0.05)",
            "x = 1  # <img src=x onerror=alert(1)>",
            COUNTS,
        ],
        env=_front_end_env(tmp_path),
    )
    for run in runs:
        assert run.error is None, run.text
    # Colab's own kernel: its Shell, with google.colab.output imported at start
    assert runs[0].stdout == "SHELL=google.colab._shell\nOUTPUT=True\n", runs[0].text
    assert runs[1].stdout == "DROPPED={}\nMANAGER=None\n"  # the emulation is in, nothing sent
    show = runs[3]
    notes = [line for line in show.stdout.splitlines() if line.startswith("nbgpumon:")]
    assert notes == [
        "nbgpumon: in Colab the chart is a picture (%gpumon --static), redrawn after every "
        "cell: Colab does not show widget updates sent from a background thread"
    ]
    picture = _shown(show.outputs)["data"]
    assert WIDGET_MIME not in picture  # no widget to stay blank
    # The saved output is the picture as the main thread last redrew it, after cell [6]:
    # the 128 MiB cell [5] is in its band and its summary, though every redraw that the
    # sampler's thread sent while [5] ran was dropped.
    # (128 MiB kept and the cell's own churn: 120-140 MiB in all)
    assert re.search(r"^\[5\] host \+1[23]\d(\.\d)? MiB", picture["text/plain"], re.M), picture
    assert ">[5]</text>" in picture["image/svg+xml"]
    assert "<img" not in picture["text/html"].replace("&lt;img", "")
    counts = runs[6].stdout
    assert re.search(r"'update_display_data': [1-9]", counts), counts  # the thread's redraws
    # nbgpumon made no widget, so anywidget never turned Colab's custom widget manager on
    assert "MANAGER=None" in counts, counts


def test_in_colab_the_live_widget_asked_for_by_name_turns_on_colabs_custom_widget_manager(
    tmp_path,
):
    runs = run_cells(
        ["%load_ext nbgpumon", "import nbgpumon\nnbgpumon.monitor().widget()", COUNTS],
        env=_front_end_env(tmp_path),
    )
    assert runs[1].error is None, runs[1].text
    shown = _shown(runs[1].outputs)
    assert WIDGET_MIME in shown["data"]
    assert shown["data"]["image/svg+xml"].startswith("<svg")  # for a page without widgets
    # anywidget's own call turned on the real manager, and its URL travels with the view
    manager = runs[2].stdout.split("MANAGER=", 1)[1].strip()
    assert MANAGER_URL.match(manager), runs[2].text
    metadata = shown["metadata"][WIDGET_MIME]
    assert metadata == {"colab": {"custom_widget_manager": {"url": manager}}}, shown
