"""Children charged to the cells that started them, in a real kernel: real child processes
(a shell escape's script, a ``Popen`` left running, a two-rank job, a child that lives a
second), listed on the GPU by the fake NVML (tests/fake_nvml: each child says what it holds)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from notebook_runner import fake_nvml_env, run_cells

GIB = 2**30
HOLDER = Path(__file__).parent / "children" / "holder.py"
CHILDREN_OF = (
    "import dataclasses as _dc, json as _json, nbgpumon as _nbg\n"
    "def _children(label):\n"
    "    _rec = [r for r in _nbg.cells() if r.label.startswith(label)][-1]\n"
    "    return [_dc.asdict(c) | {'count': _rec.execution_count} for c in _rec.children]\n"
)
WAIT_FOR_CHILD = (
    "import time as _t\n"
    "_s = _nbg.monitor()._session\n"
    "_d = _t.monotonic() + 30\n"
    "while not any(p.is_child for p in _s.children.processes_now()) and _t.monotonic() < _d:\n"
    "    _t.sleep(0.05)\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    use = tmp_path_factory.mktemp("gpu-use")
    env = fake_nvml_env(
        devices=[{"name": "Fake GPU", "used": GIB, "total": 16 * GIB}],
        processes=[{"pid": "self", "used": 2**20}, {"pid": "descendants", "used_from": str(use)}],
    )
    env["GPU_USE"] = str(use)
    py, holder = sys.executable, str(HOLDER)
    cells = [
        "%load_ext nbgpumon",
        f"import json, os, subprocess, sys, time\n{CHILDREN_OF}",
        f"!{py} {holder} {3 * GIB} 87 1.5  # shell escape",
        f"# short\nsubprocess.run([{py!r}, {holder!r}, str({GIB}), '40', '1.0'])",
        "# job\nranks = [subprocess.Popen([sys.executable, "
        f"{holder!r}, str({GIB // 2}), '60', '1.5'], env={{**os.environ, 'RANK': str(r), "
        "'LOCAL_RANK': str(r), 'WORLD_SIZE': '2', 'MASTER_ADDR': '127.0.0.1', "
        "'MASTER_PORT': '29555'}) for r in range(2)]\n[p.wait() for p in ranks]",
        f"# exit\np3 = subprocess.Popen([{py!r}, {holder!r}, str({GIB}), '10', '0.8', '3'])\n"
        "_d = time.monotonic() + 30\n"
        "while not os.path.exists(f'/proc/{p3.pid}') or open(f'/proc/{p3.pid}/stat').read()"
        ".rsplit(')', 1)[1].split()[0] != 'Z':\n"
        "    time.sleep(0.05)\n"
        "    assert time.monotonic() < _d\n"
        "_s = _nbg.monitor()._session\n"  # a zombie, not waited for yet, until the sampler saw it
        "while not any(r.exit_code == 3 for r in list(_s.process_source.ended)):\n"
        "    time.sleep(0.05)\n"
        "    assert time.monotonic() < _d\n"
        "p3.wait()",
        f"# popen\nkept = subprocess.Popen([{py!r}, {holder!r}, str({GIB}), '50', '120'])",
        WAIT_FOR_CHILD + "print('SEEN', any(p.is_child for p in _s.children.processes_now()))",
        "%gpumon status",
        "%gpumon snapshot",
        "print('CHILDREN=' + _json.dumps({k: _children(k) for k in "
        "('!', '# short', '# job', '# exit', '# popen')}))",
        "kept.kill(); kept.wait()",
    ]
    return run_cells(cells, env=env, timeout=180)


def _children(run) -> dict[str, list[dict]]:
    return run[-2].json_after("CHILDREN=")


def test_a_shell_escapes_script_is_charged_to_its_cell_with_its_peak(run):
    children = _children(run)["!"]
    assert len(children) == 1, children
    child = children[0]
    assert child["command"].startswith("python") and "holder.py" in child["command"]
    # ``sh -c`` runs it by exec (dash and bash do, for one command): the same PID, followed
    # across the exec to what it runs now; a shell that forks makes it depth 2
    assert child["depth"] in (1, 2)
    (gpu,) = child["gpus"]
    assert gpu["peak"] == 3 * GIB
    # read every 0.2 s (two 0.1 s ticks); a gap of one more tick when the machine is slow
    assert gpu["exact"] is False and 0.2 <= gpu["interval"] <= 0.31
    assert gpu["util_mean"] == pytest.approx(87)
    assert child["ended"] is not None and child["ended"] >= child["started"] + 1.0


def test_a_child_that_lives_a_second_is_seen(run):
    (child,) = _children(run)["# short"]
    assert child["gpus"][0]["peak"] == GIB
    assert child["depth"] == 1


def test_the_ranks_of_a_job_are_one_job_with_their_own_figures(run):
    ranks = _children(run)["# job"]
    assert sorted(c["rank"] for c in ranks) == [0, 1]
    assert {c["job"] for c in ranks} == {"127.0.0.1:29555"}
    assert all(c["world_size"] == 2 and c["gpus"][0]["peak"] == GIB // 2 for c in ranks)


def test_an_exit_status_seen_before_the_wait_is_kept(run):
    (child,) = _children(run)["# exit"]
    assert child["exit_code"] == 3


def test_a_child_left_running_is_marked_in_status_and_the_snapshot(run):
    popen_cell = _children(run)["# popen"]
    assert len(popen_cell) == 1 and popen_cell[0]["ended"] is None  # still running
    count = popen_cell[0]["count"]
    assert "SEEN True" in run[7].stdout
    mark = f"(child of this kernel, started by [{count}])"
    status, snapshot = run[8].text, run[9].text
    assert any("holder.py" in line and mark in line for line in status.splitlines()), status
    assert any("holder.py" in line and mark in line for line in snapshot.splitlines()), snapshot
    assert "this kernel" in status


def test_no_cell_shows_an_error(run):
    assert [c.source[:30] for c in run if c.error] == []
