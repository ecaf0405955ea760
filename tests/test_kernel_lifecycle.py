"""Load, unload, reload; no framework import; no CUDA; fork safety. All in real kernels."""

from __future__ import annotations

import pytest

from notebook_runner import (
    COLAB_RUNTIME,
    SHOW_WIDGET,
    WAIT_FOR_ALLOCATOR_READS,
    fake_nvml_env,
    run_cells,
)

COUNT_WIRING = (
    "import threading\n"
    "ip = get_ipython()\n"
    "samplers = [t for t in threading.enumerate() if t.name == 'nbgpumon-sampler']\n"
    "pre = [f for f in ip.events.callbacks['pre_run_cell'] if 'nbgpumon' in repr(f)]\n"
    "post = [f for f in ip.events.callbacks['post_run_cell'] if 'nbgpumon' in repr(f)]\n"
    "conf = [c for c in ip.configurables if type(c).__name__ == 'GPUMon']\n"
    "print('WIRING', len(samplers), len(pre), len(post), len(conf))"
)


def test_load_twice_unload_reload_leaves_one_set_of_hooks_and_one_thread():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%load_ext nbgpumon",
            COUNT_WIRING,
            "%unload_ext nbgpumon",
            COUNT_WIRING,
            "%gpumon status",
            "%load_ext nbgpumon",
            "%reload_ext nbgpumon",
            "%reload_ext nbgpumon",
            COUNT_WIRING,
            "x = 1",
            "import nbgpumon\nprint('LABELS', [r.label for r in nbgpumon.cells()])",
        ]
    )
    assert runs[2].stdout.split() == ["WIRING", "1", "1", "1", "1"]
    assert runs[4].stdout.split() == ["WIRING", "0", "0", "0", "0"]
    assert "UsageError: nbgpumon is not loaded: run %load_ext nbgpumon first" in runs[5].text
    assert runs[9].stdout.split() == ["WIRING", "1", "1", "1", "1"]
    # each cell is recorded once, not once per load
    labels = runs[11].stdout.split("LABELS ", 1)[1]
    assert labels.count("'x = 1'") == 1


def test_load_ext_does_not_import_torch():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon status",
            "%gpumon",
            "import sys; print('TORCH', 'torch' in sys.modules)",
        ]
    )
    assert runs[3].stdout.split() == ["TORCH", "False"]
    assert "  torch: not imported" in runs[1].text
    assert "  JAX: not imported" in runs[1].text and "  CuPy: not imported" in runs[1].text


@pytest.mark.torch
def test_with_torch_imported_but_no_cuda_nothing_breaks_and_cuda_stays_uninitialized():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import torch\nx = torch.ones(1024, 1024)",
            WAIT_FOR_ALLOCATOR_READS,  # several sampler ticks and allocator reads
            "%gpumon summary on",
            "y = torch.zeros(256, 1024, 1024)",
            "%gpumon status",
            "%gpumon",
            "import nbgpumon\nwith nbgpumon.track('cpu work'):\n    z = x @ x\n"
            "print('CUDA', torch.cuda.is_initialized())",
        ]
    )
    for run in runs:
        assert run.error is None, run.text
    assert runs[2].stdout.split() == ["TICKS", "True"]  # the reads happened, with torch there
    assert runs[4].stdout.startswith("[5] host +1.0 GiB")
    assert "  torch: CUDA not initialised by this kernel yet" in runs[5].text
    assert runs[7].stdout.split()[:2] == ["CUDA", "False"]


def test_fork_while_the_sampler_runs_does_not_hang_the_child():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%config GPUMon.interval = 0.01",
            # Forks while ticks run back to back (a slow fake driver makes each tick hold the
            # sampler's lock ~10 ms): a child that inherited a held lock would hang in tick().
            "import os, time, nbgpumon\n"
            "mon = nbgpumon.monitor()\n"
            "hung = 0\n"
            "for i in range(30):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        mon._session.sampler.tick(); mon.timeline.latest(); mon.timeline.window()\n"
            "        with nbgpumon.track('in child'):\n"
            "            pass\n"
            "        os._exit(0 if not mon._session.sampler.running else 3)\n"
            "    deadline = time.time() + 5\n"
            "    while True:\n"
            "        done, status = os.waitpid(pid, os.WNOHANG)\n"
            "        if done:\n"
            "            assert os.waitstatus_to_exitcode(status) == 0\n"
            "            break\n"
            "        if time.time() > deadline:\n"
            "            os.kill(pid, 9); os.waitpid(pid, 0); hung += 1; break\n"
            "        time.sleep(0.002)\n"
            "print('HUNG', hung, 'RUNNING', mon._session.sampler.running)",
        ],
        env=fake_nvml_env(devices=[{"name": "Slow GPU"}], call_delay=0.001),
        timeout=180,
    )
    assert runs[2].stdout.split() == ["HUNG", "0", "RUNNING", "True"], runs[2].text


@pytest.mark.torch
def test_dataloader_workers_forked_while_the_sampler_runs_finish():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%config GPUMon.interval = 0.01",
            "import torch\n"
            "from torch.utils.data import DataLoader, TensorDataset\n"
            "ds = TensorDataset(torch.arange(512.0))\n"
            "loader = DataLoader(ds, batch_size=32, num_workers=2,\n"
            "                    multiprocessing_context='fork')\n"
            "print('SUM', int(sum(b[0].sum() for b in loader)))",
        ],
        env=fake_nvml_env(devices=[{"name": "Slow GPU"}], call_delay=0.001),
        timeout=180,
    )
    assert runs[2].stdout.split() == ["SUM", str(sum(range(512)))], runs[2].text


ALIVE = (
    "import atexit, gc, os, threading, nbgpumon\n"
    "from nbgpumon import Monitor\n"
    "from nbgpumon._sampling.sampler import Sampler\n"
    "from nbgpumon._views.widget.live_chart import GPUMonWidget\n"
    "def alive():\n"
    "    gc.collect()\n"
    "    objects = gc.get_objects()\n"
    "    return [atexit._ncallbacks(), sum(isinstance(o, Monitor) for o in objects),\n"
    "            sum(isinstance(o, Sampler) for o in objects),\n"
    "            sum(isinstance(o, GPUMonWidget) for o in objects),\n"
    "            sum(t.name == 'nbgpumon-sampler' for t in threading.enumerate())]\n"
    "def descriptors():\n"
    "    return len(os.listdir('/proc/self/fd'))\n"
    # the sampler's thread opens its output socket with its first message: wait for that
    "import time\n"
    "deadline = time.monotonic() + 30\n"
    "while nbgpumon.monitor()._publisher.messages_sent == 0 and time.monotonic() < deadline:\n"
    "    time.sleep(0.05)\n"
    "first = (descriptors(), alive())\n"
    "print('FIRST', first)"
)
# the widget, shown from inside a loop (in Colab's runtime %gpumon is the picture: by name there)
_SHOW = (
    "display(nbgpumon.monitor().widget())" if COLAB_RUNTIME else "ip.run_line_magic('gpumon', '')"
)
RELOAD_100 = (
    "from IPython.display import display\n"
    "ip = get_ipython()\n"
    "for i in range(50):\n"
    "    ip.run_line_magic('unload_ext', 'nbgpumon')\n"
    "    ip.run_line_magic('load_ext', 'nbgpumon')\n"
    f"    {_SHOW}\n"
    "    ip.run_line_magic('reload_ext', 'nbgpumon')\n"
    f"    {_SHOW}\n"
    "print('AFTER', alive())"
)
# ipykernel keeps a socket for every thread that sent output (each load's sampler sends the
# widget's samples) and closes those of ended threads every 10 s: wait for that, with a deadline.
DESCRIPTORS_SETTLE = (
    "import time\n"
    "deadline = time.monotonic() + 60\n"
    "while descriptors() > first[0] and time.monotonic() < deadline:\n"
    "    time.sleep(0.5)\n"
    "print('DESCRIPTORS', first[0], descriptors())"
)


def test_a_hundred_reloads_leave_no_descriptor_exit_handler_monitor_or_widget_behind():
    runs = run_cells(
        ["%load_ext nbgpumon", SHOW_WIDGET, ALIVE, RELOAD_100, DESCRIPTORS_SETTLE],
        timeout=240,
    )
    first = runs[2].stdout.split("FIRST ", 1)[1]
    descriptors, alive = eval(first)  # (int, [int, ...]) printed by the kernel
    assert alive[1:] == [1, 1, 1, 1], runs[2].text
    after = runs[3].stdout.split("AFTER ", 1)
    assert len(after) == 2, runs[3].text
    assert eval(after[1]) == alive, runs[3].text
    settled = runs[4].stdout.split()
    assert settled[0] == "DESCRIPTORS" and int(settled[2]) <= descriptors, runs[4].text


# What %load_ext must not wait for (docs/benchmarks.md, issues 13 and 23): the views'
# libraries, numpy (the timeline's writes need none: only a reader that wants arrays imports
# it), the recorder, the cluster client and the exporter.
HEAVY = (
    "numpy", "pandas", "anywidget", "ipywidgets", "bqplot", "sqlite3", "urllib.request",
    "prometheus_client",
)  # fmt: skip
# A finder that only notes which thread first asked for each of them, and finds nothing.
WATCH_IMPORTS = (
    "import sys, threading\n"
    "first_import = {}\n"
    "class Watch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name in {HEAVY!r}:\n"
    "            first_import.setdefault(name, threading.current_thread().name)\n"
    "sys.meta_path.insert(0, Watch())\n"
    f"print('HAD', [m for m in {HEAVY!r} if m in sys.modules] or ['none'])"
)


@pytest.mark.skipif(
    COLAB_RUNTIME,
    reason="Colab's kernel has imported numpy, ipywidgets and anywidget (google.colab's own "
    "start) before the first cell: there is no import left for the load to avoid",
)
def test_load_and_sampling_import_no_numpy_or_views():
    runs = run_cells(
        [
            WATCH_IMPORTS,
            "%load_ext nbgpumon",
            "import nbgpumon, sys, time\n"
            "mon = nbgpumon.monitor()\n"
            "deadline = time.monotonic() + 30\n"
            "while mon.timeline.cursor < 2 and time.monotonic() < deadline:\n"
            "    time.sleep(0.01)\n"
            "print('FILLED', mon.timeline.cursor >= 2)\n"
            "print('IMPORTED', sorted(first_import.items()))",
            "x = sum(range(1000))",
            "print('CELLS', [r.label for r in nbgpumon.cells()][-1:])\n"
            "print('STILL', sorted(first_import.items()))\n"
            "print('LATEST', mon.timeline.latest()['gpu0.nvml.mem_used'] > 0)\n"
            "print('WINDOW', mon.timeline.window().times.size >= 2)\n"
            "print('READER', sorted(first_import.items()))",
        ],
        env=fake_nvml_env(devices=[{}]),
    )
    assert runs[0].stdout.startswith("HAD") and "numpy" not in runs[0].stdout, runs[0].text
    assert "nbgpumon" in runs[1].stdout and runs[1].error is None, runs[1].text
    lines = runs[2].stdout.splitlines()
    assert lines[0] == "FILLED True", runs[2].text
    # the sampler filled the timeline, and a cell was measured, with none of them imported
    assert lines[1] == "IMPORTED []", runs[2].text
    last = runs[4].stdout.splitlines()
    assert last[0] == "CELLS ['x = sum(range(1000))']", runs[4].text
    assert last[1] == "STILL []", runs[4].text
    assert last[2] == "LATEST True", runs[4].text
    # a reader that wants arrays brings numpy, on its own thread
    assert last[3:] == ["WINDOW True", "READER [('numpy', 'MainThread')]"], runs[4].text


def test_unload_right_after_load_stops_the_thread_with_no_import_left_to_wait_for():
    # Before issue 23 the sampler's thread imported numpy as the load returned, and an unload
    # at once waited for that import to finish before the thread could stop.
    runs = run_cells(
        [
            WATCH_IMPORTS,
            "%load_ext nbgpumon\n%unload_ext nbgpumon",
            "import threading\n"
            "print('THREADS', [t.name for t in threading.enumerate() if 'nbgpumon' in t.name])\n"
            "print('IMPORTED', sorted(first_import.items()))",
        ],
        env=fake_nvml_env(devices=[{}]),
    )
    assert runs[1].error is None, runs[1].text
    assert runs[2].stdout.splitlines() == ["THREADS []", "IMPORTED []"], runs[2].text
