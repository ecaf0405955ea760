"""Who holds the memory, in a real kernel on CPU: the holder scan finds host arrays the same way
it finds CUDA tensors, so the hidden references, the leak verdict, the OOM post-mortem and
``%gpumon free`` are tested for real here."""

from __future__ import annotations

import re

import pytest

from notebook_runner import RECORDS_CELL, fake_nvml_env, run_cells

MIB = 2**20
HOLDERS = (
    "import json\n"
    "scan = nbgpumon.holders('host')\n"
    "print('HOLDERS=' + json.dumps({h.name: [h.bytes, h.hidden] for h in scan.holders}))"
)
RSS = "print('RSS=' + str(nbgpumon.monitor()._session.host.rss()))"


def _by_source(runs):
    return {r.source: r for r in runs}


@pytest.fixture(scope="module")
def runs():
    return run_cells(
        [
            "%load_ext nbgpumon",
            "import numpy as np, nbgpumon, weakref\n"
            "keep = np.ones(2**24)  # 128 MiB of the user's own",
            "shown = np.ones(2**25)  # 256 MiB, displayed below\nshown",
            "del shown",
            HOLDERS,  # 4: Out[3] holds the deleted array
            "class Box:\n    pass\nREFS = []\n"
            "def train():\n"
            "    y = Box()\n"
            "    y.data = np.ones(2**25)\n"
            "    REFS.append(weakref.ref(y))\n"
            "    raise ValueError('bad batch')",
            "train()",
            HOLDERS,  # 7: the stored traceback keeps train()'s y
            RSS,
            "%gpumon free",
            RSS,
            HOLDERS,  # 11: nothing hidden left; keep is still there
            "print('ALIVE', REFS[0]() is not None, 'keep' in dir())",
            "%gpumon summary on",
            "retained_here = np.ones(2**25)",
            "%gpumon summary off",
            "%gpumon cells 3",
            RECORDS_CELL,
        ],
        timeout=180,
    )


def test_an_output_deleted_by_name_is_found_in_out(runs):
    holders = runs[4].json_after("HOLDERS=")
    assert holders["Out[3]"] == [2**25 * 8, True]
    assert holders["keep"] == [2**24 * 8, False]
    assert "_" not in holders  # the same array: counted once, for Out[3]


def test_a_failed_functions_local_is_found_through_the_stored_traceback(runs):
    holders = runs[7].json_after("HOLDERS=")
    assert holders["traceback frame train() local 'y'"] == [2**25 * 8, True]


def test_free_gives_the_memory_back_and_leaves_variables_alone(runs):
    freed = runs[9].stdout
    assert "Out[3]" in freed and "the stored traceback" in freed, freed
    before = int(runs[8].stdout.split("RSS=")[1])
    after = int(runs[10].stdout.split("RSS=")[1])
    assert before - after >= 400 * MIB, (before, after)  # two 256 MiB arrays came back
    holders = runs[11].json_after("HOLDERS=")
    assert holders == {"keep": [2**24 * 8, False]}
    assert runs[12].stdout.strip() == "ALIVE False True"


def test_a_retained_array_is_named_in_its_cells_ledger_entry(runs):
    line = runs[14].stdout.strip()
    assert line.startswith("[")
    assert ": retained_here 256 MiB" in line, line
    assert "retained_here 256 MiB" in runs[16].text
    records = runs[17].json_after("RECORDS=")
    (row,) = [r for r in records if r["label"] == "retained_here = np.ones(2**25)"]
    assert row["held_by"] == "retained_here"
    small = [r for r in records if r["label"] == "del shown"]
    assert small and small[0]["held_by"] == ""  # kept nothing: no verdict


def test_host_memory_that_no_variable_holds_gets_no_verdict():
    # Imports and module-level caches grow resident memory too; naming nobody is no news.
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon summary on",
            "import builtins\nbuiltins.CACHE = bytearray(2**27)  # held by a module, not a name\n"
            "builtins.CACHE[::4096] = b'x' * (2**27 // 4096)  # every page touched",
        ]
    )
    line = runs[2].stdout.strip()
    # over the threshold and unnamed (no ": holder"); a transient peak above it may show too
    assert re.match(r"^\[3\] host \+1\d\d MiB(?: \(peak \+1\d\d MiB\))? · ", line), line


def test_an_out_of_memory_error_prints_a_post_mortem_that_keeps_no_frame_alive():
    pytest.importorskip("torch")
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "import numpy as np, torch, weakref, nbgpumon\nREFS = []\nclass Box:\n    pass",
            "def step():\n"
            "    x = Box()\n"
            "    x.data = np.ones(2**25)\n"
            "    REFS.append(weakref.ref(x))\n"
            "    raise torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 2.00 "
            "GiB. GPU 0 has a total capacity of 79.25 GiB of which 1.50 GiB is free.')\n"
            "step()",
            "%gpumon free",
            "print('ALIVE', REFS[0]() is not None)",
            "raise MemoryError()",  # the host's: recorded as oom, no GPU post-mortem
        ],
        timeout=120,
    )
    report = runs[2].stdout
    assert runs[2].error == "OutOfMemoryError"
    assert "out of GPU memory (torch) in [3]: asked for 2.0 GiB" in report, report
    assert "held by: traceback frame step() local 'x' 256 MiB" in report, report
    assert "%gpumon free: drops the stored traceback (256 MiB)" in report, report
    *_, general, measure = report.rstrip().splitlines()
    assert general.endswith("gradient accumulation")  # the generic advice, last of what to try
    assert "nbgpumon.whatif(" in measure  # (no whatif ran: how to measure the fixes)
    assert runs[4].stdout.strip() == "ALIVE False"
    assert runs[5].error == "MemoryError" and "out of GPU memory" not in runs[5].stdout


@pytest.mark.parametrize("nvml", [{"devices": []}, {"import_error": True}], ids=["none", "no-nvml"])
def test_holders_of_cuda_memory_on_a_machine_without_a_gpu_say_so_in_one_line(nvml):
    cells = ["%load_ext nbgpumon", "%gpumon holders cuda", "%gpumon holders cuda:0"]
    runs = run_cells([*cells, "%gpumon holders host"], env=fake_nvml_env(**nvml))
    for run in runs[1:3]:
        said = run.stderr.splitlines()
        assert len(said) == 1 and run.stdout == "" and run.error is None, run.text
        assert said[0].startswith("UsageError: no GPU here ("), said
        assert said[0].endswith(
            "so nothing holds CUDA memory; %gpumon holders host lists what holds host memory"
        ), said
    assert "objects looked at" not in runs[1].text + runs[2].text
    assert "nbgpumon holders of host memory" in runs[3].text  # what it can still show


def test_holders_of_cuda_memory_are_looked_for_where_there_is_a_gpu():
    runs = run_cells(
        ["%load_ext nbgpumon", "%gpumon holders cuda"],
        env=fake_nvml_env(devices=[{"name": "Fake H200", "uuid": "GPU-aaaa"}]),
    )
    said = runs[1].text
    assert said.startswith("nbgpumon holders of cuda memory: 0 B in 0 holders"), said
