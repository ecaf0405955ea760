"""A quiet cell's end (nothing to print under it) is finished after the kernel has sent the
cell's reply (issue 43), in a real kernel: the readings are taken at the cell's end, the record
is stored before the kernel reads its next message, a cell with something to print has it all
before its reply, a put-off end that fails is said at the next cell, and what the next cell's
start reuses of the last end (the namespace as that cell left it) is noted afresh where a front
end's own code ran between them."""

from __future__ import annotations

import json

from kernel_client import Kernel

MIB = 1 << 20
# our own post_run_cell callback, after nbgpumon's: how many records the ledger holds then
SPY = (
    "import json, nbgpumon\n"
    "_seen = []\n"
    "get_ipython().events.register(\n"
    "    'post_run_cell', lambda result: _seen.append(len(nbgpumon.monitor().cells()))\n"
    ")"
)
# run as a front end's own code (no cell: nothing of nbgpumon's runs before it)
PROBE = (
    "print('PROBE=' + json.dumps({'seen': _seen, 'labels': [r.label for r in "
    "nbgpumon.monitor().cells()]}))"
)


def _stdout(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")


def _text(msgs: list[dict]) -> str:
    """What a cell printed and showed, as text."""
    shown = [m["content"]["data"].get("text/plain", "") for m in msgs if "data" in m["content"]]
    return _stdout(msgs) + "".join(shown)


def _probe(kernel: Kernel) -> dict:
    out = _stdout(kernel.run(PROBE, store_history=False))
    (line,) = [x for x in out.splitlines() if x.startswith("PROBE=")]
    return json.loads(line[len("PROBE=") :])


def test_a_quiet_cell_s_record_is_stored_after_its_reply_and_before_the_next_message(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run(SPY)
    kernel.run("x = 1")
    seen = _probe(kernel)
    # when each cell's post_run_cell ran, its own record was not stored yet (the spy's cell
    # saw none, "x = 1" the spy's); by the next message (no cell: nothing of nbgpumon's ran
    # for it), "x = 1" has its record too
    assert seen == {"seen": [0, 1], "labels": ["import json, nbgpumon", "x = 1"]}

    # a cell with a line to print under it has its record before its reply
    summary = kernel.run("%gpumon summary on\ny = 2")
    assert "\n[4] host " in _stdout(summary), _stdout(summary)
    # (the first probe's own post_run_cell saw "x = 1"'s record: 2)
    assert _probe(kernel)["seen"] == [0, 1, 2, 3]

    status = _text(kernel.run("%gpumon status"))
    (line,) = [x for x in status.splitlines() if x.startswith("cell path:")]
    assert "; replies waited for " in line, line


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


def _probe_labels(kernel: Kernel) -> list[str]:
    out = _stdout(
        kernel.run(
            "import json, nbgpumon\n"
            "_cells = nbgpumon.monitor().cells()\n"
            "print('LABELS=' + json.dumps([r.label for r in _cells]))",
            store_history=False,
        )
    )
    (line,) = [x for x in out.splitlines() if x.startswith("LABELS=")]
    return json.loads(line[len("LABELS=") :])


def _holders(kernel: Kernel) -> list[str]:
    out = _stdout(
        kernel.run(
            "import json, nbgpumon\n"
            "_r = nbgpumon.monitor().cells()[-1].retention\n"
            "print('HOLDERS=' + json.dumps([n for n, _ in _r.holders] if _r else []))",
            store_history=False,
        )
    )
    (line,) = [x for x in out.splitlines() if x.startswith("HOLDERS=")]
    return json.loads(line[len("HOLDERS=") :])


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
