"""A quiet cell's end (nothing to print under it) is finished after the kernel has sent the
cell's reply (issue 43), in a real kernel: the readings are taken at the cell's end, the record
is stored a moment later with no message after it (or when the ledger is read first), a cell
with something to print has it all before its reply, a put-off end that fails is said at the
next cell, and what the next cell's start reuses of the last end (the namespace as that cell
left it) is noted afresh where a front end's own code ran between them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from kernel_client import Kernel
from waiting import until

MIB = 1 << 20
# our own post_run_cell callback, after nbgpumon's: how many records the ledger holds then
SPY = (
    "import json, nbgpumon\n"
    "_ledger = nbgpumon.monitor()._session.ledger\n"
    "_seen = []\n"
    "get_ipython().events.register(\n"
    "    'post_run_cell', lambda result: _seen.append(_ledger.record_count())\n"
    ")"
)
# run as a front end's own code (no cell: nothing of nbgpumon's runs before it); the ledger as
# it is, then as the API reads it
PROBE = (
    "print('PROBE=' + json.dumps({'seen': _seen, 'held': _ledger.record_count(), "
    "'labels': [r.label for r in nbgpumon.monitor().cells()]}))"
)


def _stdout(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")


def _text(msgs: list[dict]) -> str:
    """What a cell printed and showed, as text."""
    shown = [m["content"]["data"].get("text/plain", "") for m in msgs if "data" in m["content"]]
    return _stdout(msgs) + "".join(shown)


def _when_held(kernel: Kernel, records: int) -> dict:
    """The probe, once the ledger holds ``records`` records (with no cell run to make it)."""

    def held() -> dict | None:
        probe = _probe(kernel)
        return probe if probe["held"] == records else None

    return until(held, f"the ledger to hold {records} records", timeout=20)


def _probe(kernel: Kernel) -> dict:
    out = _stdout(kernel.run(PROBE, store_history=False))
    (line,) = [x for x in out.splitlines() if x.startswith("PROBE=")]
    return json.loads(line[len("PROBE=") :])


def test_a_quiet_cell_s_record_is_stored_after_its_reply_and_read_in_full(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run(SPY)
    kernel.run("x = 1")
    # when each cell's post_run_cell ran, its own record was not stored yet (the spy's cell
    # saw none, "x = 1" the spy's)...
    probe = _when_held(kernel, 2)  # ...and then it was, with no cell after it
    assert probe["held"] == 2, probe
    assert probe["seen"][:2] == [0, 1], probe
    assert probe["labels"] == ["import json, nbgpumon", "x = 1"]

    # the API's read, at once after a cell, finishes its put-off end if that has not run yet
    kernel.run("x = 2")
    read = _stdout(
        kernel.run(
            "print(json.dumps([r.label for r in nbgpumon.monitor().cells()]))",
            store_history=False,
        )
    )
    assert json.loads(read)[-1] == "x = 2"

    # a cell with a line to print under it has its record before its reply
    summary = kernel.run("%gpumon summary on\ny = 2")
    assert "\n[5] host " in _stdout(summary), _stdout(summary)
    assert _probe(kernel)["seen"][-1] == 4  # (spy, x = 1, x = 2, and this one)

    status = _text(kernel.run("%gpumon status"))
    (line,) = [x for x in status.splitlines() if x.startswith("cell path:")]
    assert "; replies waited for " in line, line


# each cell's times as the cell path's clock keeps them: (waited for, in all), oldest first
CLOCK = (
    "_clock = nbgpumon.monitor()._session.cells_pipeline.clock\n"
    "print('CLOCK=' + json.dumps(list(zip(_clock._waited[: _clock._cells], "
    "_clock._totals[: _clock._cells]))))"
)


def _clock_rows(kernel: Kernel) -> list[tuple[int, int]]:
    out = _stdout(kernel.run(CLOCK, store_history=False))
    (line,) = [x for x in out.splitlines() if x.startswith("CLOCK=")]
    return [tuple(row) for row in json.loads(line[len("CLOCK=") :])]


def test_a_put_off_end_finished_while_the_kernel_is_idle_is_not_waited_for(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run(SPY)
    _when_held(kernel, 1)
    for k in range(2):  # run by hand: each end finished while the kernel was idle
        kernel.run(f"x = {k}")
        _when_held(kernel, 2 + k)
    alone = _clock_rows(kernel)[-2:]
    assert all(0 < waited < total for waited, total in alone), alone
    # (a cell whose end the next cell's start finished: tests/test_cell_clock.py)


def test_a_put_off_end_that_fails_is_said_under_the_next_cell(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run(  # (no cell itself: the next one's end is the first to meet it)
        "import nbgpumon\n"
        "_ledger = nbgpumon.monitor()._session.ledger\n"
        "def _fails_once(*args, **kwargs):\n"
        "    del _ledger.finish  # (the class's own, from the next cell on)\n"
        "    raise RuntimeError('the disk is on fire')\n"
        "_ledger.finish = _fails_once",
        store_history=False,
    )
    quiet = kernel.run("z = 3")
    assert "nbgpumon" not in _stdout(quiet)  # its end came after its reply
    said = _stdout(kernel.run("w = 4"))
    assert said == ("nbgpumon: cell [2]'s record was lost: RuntimeError: the disk is on fire\n"), (
        said
    )
    assert _probe_labels(kernel) == ["w = 4"]  # the one lost, no other


def _printed(kernel: Kernel, code: str) -> Any:
    """What ``code``, run as a front end's own execution, printed as JSON on its ``OUT=`` line."""
    out = _stdout(kernel.run("import json, nbgpumon\n" + code, store_history=False))
    (line,) = [x for x in out.splitlines() if x.startswith("OUT=")]
    return json.loads(line[len("OUT=") :])


def _probe_labels(kernel: Kernel) -> list[str]:
    return _printed(
        kernel, "print('OUT=' + json.dumps([r.label for r in nbgpumon.monitor().cells()]))"
    )


def _holders(kernel: Kernel) -> list[str]:
    return _printed(
        kernel,
        "_r = nbgpumon.monitor().cells()[-1].retention\n"
        "print('OUT=' + json.dumps([n for n, _ in _r.holders] if _r else []))",
    )


def test_a_name_a_front_end_binds_again_between_cells_is_not_the_next_cell_s_holder(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run("import numpy\nbuf = numpy.ones(1024)")
    # a front end's own code binds an existing name again between two cells (silently, as
    # some do: no pre_run_cell for it)
    kernel.run(f"buf = numpy.ones({10 * MIB})", silent=True, store_history=False)
    kernel.run(f"keep = numpy.ones({10 * MIB})")
    # the cell kept 80 MiB (over the 64 MiB threshold): its new holder is "keep"; "buf" was
    # bound again before the cell began
    assert _holders(kernel) == ["keep"]

    # with nothing between two cells, the namespace the last one left is the next one's start
    kernel.run(f"more = numpy.ones({10 * MIB})")
    assert _holders(kernel) == ["more"]


def test_a_quiet_cell_s_record_is_recorded_with_no_message_after_it(kernel, tmp_path: Path):
    path = tmp_path / "run.sqlite"
    kernel.run("%load_ext nbgpumon")
    assert "recording to" in _stdout(kernel.run(f"%gpumon record {path}"))
    kernel.run("x = 1")

    # nothing more is sent to the kernel: its put-off end runs on its own, and the recorder's
    # next transaction (within 0.5 s) writes the cell
    def recorded() -> list[str] | None:
        with sqlite3.connect(path) as db:
            labels = [label for (label,) in db.execute("SELECT label FROM cells ORDER BY idx")]
        return labels if "x = 1" in labels else None

    labels = until(recorded, "the cell in the recording", timeout=20, every=0.05)
    assert labels[-1:] == ["x = 1"], labels
