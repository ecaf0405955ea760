"""The live chart in JupyterLab 4 on a kernel whose thread's messages are dropped, as Colab's
front end drops them (colabtools#3373; tests/colab_emulation/colab_front_end.py, run by a
kernelspec of its own): the chart gets none of the sampler's messages, asks for the rows it
missed when the main thread next sends, draws them, and says so in one line.

JupyterLab stands in for Colab's closed front end, with only that behaviour of it emulated. In
the Colab leg (scripts/legs/colab) the kernel is Colab's own (``google.colab._kernel.Kernel``,
Colab's Shell, the real google.colab.output and its custom widget manager); in the main
virtualenv it is a plain ipykernel, as any front end that drops a thread's messages would see.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from notebook_page import NotebookPage, write_notebook
from notebook_runner import COLAB_RUNTIME

pytestmark = pytest.mark.browser

EMULATION = Path(__file__).resolve().parent.parent / "colab_emulation" / "colab_front_end.py"
KERNEL = "python3-colab-emulated"
CELLS = [
    "%load_ext nbgpumon\nimport nbgpumon\nnbgpumon.monitor().widget()",
    # the sampler's 30 rows (waited for, with a deadline): every message it sends is dropped
    "import time\n_m, _d = nbgpumon.monitor(), time.monotonic() + 60\n_c = _m.data.cursor + 30\n"
    "while (_m.data.cursor < _c or not get_ipython().kernel.dropped_by_front_end['comm_msg'])"
    " and time.monotonic() < _d:\n    time.sleep(0.05)",
    "_d = get_ipython().kernel.dropped_by_front_end\n_p = nbgpumon.monitor()._publisher\n"
    "print('SHELL', type(get_ipython()).__module__)\n"
    "print('DROPPED', _d['comm_msg'] > 0, 'RESENT', _p.resent_rows)",
]
# Colab's kernel class where its runtime is installed (the Colab leg), as Colab's kernelspec has
COLAB_KERNEL_CLASS = ["--IPKernelApp.kernel_class=google.colab._kernel.Kernel"]
# JupyterLab 4's widget manager (jupyterlab_widgets 3) registers @jupyter-widgets/base 2.0
# only, and Colab's ipywidgets 7.7.1 gives every widget a Layout model of base 1.2, which
# Colab's own manager loads: in JupyterLab that one model fails, with this console error. The
# chart is an anywidget and draws without it (the test checks that); nothing else is let pass.
IPYWIDGETS7_LAYOUT = re.compile(
    r"^Error: Module @jupyter-widgets/base, version \^1\.2\.0 is not registered, however,\s+"
    r"2\.0\.0 is\n"  # then its stack
)


@pytest.fixture
def colab_kernel(lab_server):
    """A kernelspec in the Lab server's data dir whose kernel runs the front end's emulation:
    Colab's own kernel in Colab's runtime, else a plain one."""
    spec = Path(lab_server.env["JUPYTER_DATA_DIR"]) / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
            f"--IPKernelApp.exec_files={EMULATION}",
            *(COLAB_KERNEL_CLASS if COLAB_RUNTIME else [])]  # fmt: skip
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Colab (emulated)", "language": "python"})
    )
    yield lab_server
    shutil.rmtree(spec, ignore_errors=True)


def test_the_chart_catches_up_on_the_rows_a_colab_like_front_end_dropped(page, colab_kernel):
    name = "colab_widget.ipynb"
    path = write_notebook(colab_kernel.root_dir / name, CELLS)
    nb_file = nbformat.read(path, as_version=4)
    nb_file.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Colab (emulated)",
                                      "language": "python"}  # fmt: skip
    nbformat.write(nb_file, path)
    nb = NotebookPage(page, colab_kernel, name).open()
    try:
        nb.run_cell(0)
        widget = nb.in_output(0, ".nbgpumon-widget").first
        widget.wait_for(state="visible", timeout=30_000)
        before = int(widget.get_attribute("data-points") or 0)
        note = widget.locator(".nbgpumon-note")
        assert note.is_hidden()
        nb.run_cell(1)
        # after the cell the main thread sent the newest rows; the chart asked for those it
        # missed, and the kernel (idle) sent them: all of the cell's ~30 rows are drawn
        note.wait_for(state="visible", timeout=30_000)
        nb.wait_until(
            lambda: int(widget.get_attribute("data-points") or 0) >= before + 25,
            timeout=30_000,
            what="the missed rows drawn",
        )
        page.wait_for_function(
            "e => /were sent again/.test(e.textContent)", arg=note.element_handle(), timeout=30_000
        )
        assert re.fullmatch(
            r"nbgpumon: samples sent while a cell ran did not arrive here \(this front end drops "
            r"what a kernel's background thread sends\); [\d,]+ were sent again after the cell, "
            r"and are drawn: the chart moves only between cells",
            note.text_content(),
        ), note.text_content()
        nb.run_cell(2)
        counts = nb.output_text(2)
        resent = int(re.search(r"RESENT (\d+)", counts).group(1))
        assert "DROPPED True" in counts and resent >= 25, counts
        shell = "google.colab._shell" if COLAB_RUNTIME else "ipykernel.zmqshell"
        assert f"SHELL {shell}\n" in counts, counts
        widget.scroll_into_view_if_needed()
        nb.screenshot("colab_widget_caught_up")
        if COLAB_RUNTIME:
            console = page.record.console
            console[:] = [c for c in console if not IPYWIDGETS7_LAYOUT.match(c[1])]
        page.record.assert_clean()
    finally:
        page.finish()
        with contextlib.suppress(Exception):
            nb.shutdown_kernel()
