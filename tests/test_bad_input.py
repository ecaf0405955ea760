"""Bad input: one clear line saying what to do, no traceback, nothing changed."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from notebook_runner import run_cells

# A file that is not a recording, made by the fixture: recording to it or reading it is refused.
CSV = Path(tempfile.gettempdir()) / f"nbgpumon-bad-input-{os.getpid()}.csv"
CSV_TEXT = "time,rss\n1,2\n"

BAD = [
    ("%gpumon bogus", "UsageError: unknown command 'bogus'; %gpumon? lists the commands"),
    ("%gpumon stauts", "UsageError: unknown command 'stauts'; did you mean %gpumon status?"),
    ("%gpumon --frobnicate", "UsageError: %gpumon has no option --frobnicate; %gpumon? lists"),
    (
        "%gpumon --interval -1",
        "UsageError: %gpumon has no --interval option; settings are changed with %config, "
        "e.g. %config GPUMon.interval = 0.1",
    ),
    (
        "%gpumon mark " + "x" * 2**20,
        "UsageError: the %gpumon line is 1,048,581 characters long; it takes at most 8,192",
    ),
    (
        "import nbgpumon; nbgpumon.mark('x' * 5000)",
        "UsageError: a mark label is at most 1,000 characters, not 5,000; shorten it",
    ),
    (
        "label = 'y' * 2000\n%gpumon mark {label}",
        "UsageError: a mark label is at most 1,000 characters, not 2,000; shorten it",
    ),
    ("%gpumon cells -3", "UsageError: usage: %gpumon cells [N], N a positive whole number"),
    ("%gpumon cells many", "UsageError: usage: %gpumon cells [N], N a positive whole number"),
    ("%gpumon summary maybe", "UsageError: usage: %gpumon summary on|off"),
    ("%gpumon status now", "UsageError: %gpumon status takes no arguments"),
    ("%gpumon mark", "UsageError: usage: %gpumon mark LABEL"),
    ("%gpumon holders gpu0", "UsageError: device is cuda, cuda:N or host, not 'gpu0'"),
    ("%gpumon holders cuda host", "UsageError: usage: %gpumon holders [cuda | cuda:N | host]"),
    ("%gpumon free all", "UsageError: %gpumon free takes no arguments"),
    ("%gpumon trace maybe", "UsageError: usage: %gpumon trace on|off"),
    ("%gpumon profile", "UsageError: profile is a cell magic: put %%gpumon profile [N] atop"),
    ("%%gpumon status\nx = 1", "UsageError: %%gpumon runs a cell only as %%gpumon profile [N]"),
    ("%%gpumon profile many\nx = 1", "UsageError: usage: %%gpumon profile [N], N a positive"),
    ("%gpumon advise /no/such/run.sqlite", "UsageError: no recording at /no/such/run.sqlite"),
    ("%gpumon compare", "UsageError: usage: %gpumon compare A [B], A and B recordings' paths"),
    ("%gpumon compare a b c", "UsageError: usage: %gpumon compare A [B], A and B recordings'"),
    ("%gpumon compare 'a.sqlite", "UsageError: No closing quotation in %gpumon compare 'a.sqlite"),
    ("%gpumon compare /no/such/run.sqlite", "UsageError: no recording at /no/such/run.sqlite"),
    (
        f"%gpumon compare {CSV}",
        f"UsageError: {CSV} is not an nbgpumon recording (it is not an SQLite file)",
    ),
    (
        "import nbgpumon; nbgpumon.compare(42)",
        "UsageError: compare's a is a recording's path, nbgpumon.load(PATH) or "
        "nbgpumon.monitor(), not int",
    ),
    (
        "%gpumon record /proc/no/such/dir/run.sqlite",
        "UsageError: cannot record to /proc/no/such/dir/run.sqlite: ",
    ),
    ("%gpumon record ''", "UsageError: cannot record to '': the path is empty; name a file"),
    ('%gpumon record "  "', "UsageError: cannot record to '  ': the path is empty; name a file"),
    (
        f"%gpumon record {CSV}",
        f"UsageError: cannot record to {CSV}: it is not an nbgpumon recording (it is not an "
        "SQLite file); record to a new file instead",
    ),
    (
        f"%gpumon report {CSV}",
        f"UsageError: {CSV} is not an nbgpumon recording (it is not an SQLite file)",
    ),
    (
        "%config GPUMon.record_path = '/proc/no/such/dir/run.sqlite'",
        "cannot record to /proc/no/such/dir/run.sqlite: ",
    ),
    ("%config GPUMon.leak_threshold = -1", "leak_threshold is a number of bytes >= 0 (0: off)"),
    (
        "%config GPUMon.interval = -1",
        "GPUMon.interval must be between 0.01 and 60 seconds, not -1.0",
    ),
    (
        "%config GPUMon.interval = 1e9",
        "GPUMon.interval must be between 0.01 and 60 seconds, not 1000000000.0",
    ),
    (
        "%config GPUMon.peak_mode = 'sometimes'",
        "The 'peak_mode' trait of a GPUMon instance expected any of ['reset', 'preserve']",
    ),
    (
        "import nbgpumon; nbgpumon.track(42)",
        'UsageError: track() takes a non-empty label: with nbgpumon.track("epoch 3"): ...',
    ),
    (
        "import nbgpumon\nr = nbgpumon.track('twice')\nwith r:\n    pass\nwith r:\n    pass",
        "UsageError: track('twice') is already used",
    ),
    (
        "import nbgpumon\n@nbgpumon.track('deco')\ndef f():\n    pass",
        "UsageError: track('deco') is a context manager, not a decorator",
    ),
    ("import nbgpumon; nbgpumon.mark('')", "UsageError: mark() takes a non-empty label"),
    ("import nbgpumon; nbgpumon.holders(7)", "UsageError: device is cuda, cuda:N or host, not 7"),
]

STATE = (
    "import nbgpumon\nm = nbgpumon.monitor()\n"
    "print('STATE', m.config.interval, m.config.peak_mode, m._session.sampler.interval, "
    "m._session.sampler.running, len([r for r in m.cells() if r.kind == 'region']))"
)


@pytest.fixture(scope="module")
def bad_run():
    CSV.write_text(CSV_TEXT)
    try:
        yield run_cells(["%load_ext nbgpumon", STATE, *(code for code, _ in BAD), STATE])
    finally:
        CSV.unlink()


@pytest.mark.parametrize(("index", "expected"), [(i, e) for i, (_, e) in enumerate(BAD)])
def test_bad_input_gives_one_clear_line(bad_run, index, expected):
    run = bad_run[2 + index]
    text = run.text.strip()
    assert expected in text
    assert len(text.splitlines()) == 1, text
    assert "Traceback" not in text
    assert len(text) <= 200, text  # a line to read, not the whole usage


def test_a_mark_label_is_taken_verbatim_and_expanded_like_other_magics():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "epoch = 3",
            "%gpumon mark lr=3e-4 --warmup, epoch {epoch}",
            "import nbgpumon\nprint('LABEL', "
            "repr(nbgpumon.monitor()._session.ledger.marks[-1][1]))",
        ]
    )
    assert runs[3].stdout.strip() == "LABEL 'lr=3e-4 --warmup, epoch 3'", runs[3].text


def test_bad_input_changes_nothing(bad_run):
    before, after = bad_run[1].stdout, bad_run[-1].stdout
    assert before.split() == ["STATE", "0.1", "reset", "0.1", "True", "0"]
    # the region that was used once ("twice") is the only new ledger region
    assert after.split() == ["STATE", "0.1", "reset", "0.1", "True", "1"]
    # the file that is not a recording is as it was, and nothing was written beside it
    assert CSV.read_text() == CSV_TEXT
    assert not list(CSV.parent.glob(f"{CSV.name}-*"))


def test_magic_help_is_real_help():
    # %gpumon? shows this docstring through the pager, which nbclient doesn't capture
    runs = run_cells(
        ["%load_ext nbgpumon", "print(get_ipython().find_line_magic('gpumon').__doc__)"]
    )
    help_text = runs[1].stdout
    assert help_text.startswith("%gpumon [--static] [command] [args ...]\n"), help_text[:80]
    assert "%gpumon summary on|off  print a one-line summary after every cell" in help_text
    assert "%config GPUMon.interval = 0.25" in help_text
