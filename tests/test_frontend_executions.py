"""Executions a front end makes for itself are no cells (DESIGN.md, invariant 13), in a real
kernel: VS Code runs its helpers with ``store_history=False``, other front ends silently. The
ledger lists the user's cells only, numbered as the user sees them, and what a helper allocates
between cells shows in the next cell's starting readings, charged to no cell."""

from __future__ import annotations

import json

from kernel_client import Kernel
from notebook_runner import RECORDS_CELL

MIB = 1 << 20
# what VS Code's Jupyter extension sends before its own code, as a user saw it in the ledger
HELPER = (
    "# Copyright (c) Microsoft Corporation. All rights reserved.\n"
    "# Licensed under the MIT License.\n"
    f"_helper_kept = bytearray(b'\\x01') * ({64 * MIB})\n"  # filled: resident, not just mapped
)
SILENT = f"_silent_kept = bytearray(b'\\x01') * ({32 * MIB})\n"


def _stdout(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")


def _shown(msgs: list[dict]) -> str:
    """What a cell displayed, as text."""
    return "".join(
        m["content"]["data"].get("text/plain", "") for m in msgs if m["msg_type"] == "display_data"
    )


def _count(msgs: list[dict]) -> int:
    """The cell's In[N], as the front end shows it."""
    (started,) = [m for m in msgs if m["msg_type"] == "execute_input"]
    return started["content"]["execution_count"]


def _records(kernel: Kernel) -> list[dict]:
    out = _stdout(kernel.run(RECORDS_CELL))
    (line,) = [x for x in out.splitlines() if x.startswith("RECORDS=")]
    return json.loads(line[len("RECORDS=") :])


def test_helper_executions_are_no_cells_and_what_they_keep_is_charged_to_no_cell(kernel):
    kernel.run("%load_ext nbgpumon")
    counts = [_count(kernel.run("%gpumon summary on\na = 1"))]
    helper = kernel.run(HELPER, store_history=False)  # VS Code: silent false, no history
    silent = kernel.run(SILENT, silent=True, store_history=False)
    second = kernel.run("b = 2")
    counts.append(_count(second))
    records = [r for r in _records(kernel) if r["kind"] == "cell"]

    assert [r["execution_count"] for r in records] == counts == [2, 3]
    assert [r["label"] for r in records] == ["%gpumon summary on", "b = 2"]
    # the helpers printed no summary line: they were not measured
    assert "nbgpumon" not in _stdout(helper) + _stdout(silent)
    assert _stdout(second).startswith("[3] host")  # the user's next cell: its own number
    first, after = records
    # the 96 MiB the helpers keep is in the next cell's starting reading...
    assert after["rss_before"] - first["rss_after"] >= 90 * MIB, (first, after)
    # ...and not in what that cell itself added
    assert abs(after["rss_after"] - after["rss_before"]) < 16 * MIB, after


def test_the_cells_table_and_the_numbering_after_helpers_are_the_users(kernel):
    kernel.run("%load_ext nbgpumon")
    kernel.run(HELPER, store_history=False)
    user = [_count(kernel.run("x = 1"))]
    kernel.run("y = 2", store_history=False)
    kernel.run("z = 3", silent=True)
    user.append(_count(kernel.run("w = 4")))
    table = _shown(kernel.run("%gpumon cells"))
    assert user == [2, 3]
    lines = table.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["[3]", "[2]"], table  # newest first
    assert "Copyright" not in table and "y = 2" not in table and "z = 3" not in table


def test_run_cell_inside_a_cell_and_from_a_thread_keeps_the_cells_one_measurement(kernel):
    kernel.run("%load_ext nbgpumon")
    inside = kernel.run(
        "import threading\n"
        "ip = get_ipython()\n"
        "ip.run_cell('nested = 1', store_history=False)\n"
        "ip.run_cell('quiet = 1', silent=True)\n"
        # a front end's execution on another thread while this cell runs, allocating
        f"t = threading.Thread(target=ip.run_cell, args=({SILENT!r},),"
        " kwargs={'store_history': False})\n"
        "t.start(); t.join(60)\n"
        "print('THREAD DONE', not t.is_alive())"
    )
    assert "THREAD DONE True" in _stdout(inside)
    captured = kernel.run("%%capture out\nprint('hidden')")
    last = kernel.run("last = 1")
    records = [r for r in _records(kernel) if r["kind"] == "cell"]
    assert [r["execution_count"] for r in records] == [
        _count(inside), _count(captured), _count(last)
    ] == [2, 3, 4]  # fmt: skip
    assert [r["status"] for r in records] == ["ok", "ok", "ok"]
    assert records[0]["label"] == "import threading"
    # what the thread's execution allocated during the cell is the cell's own
    assert records[0]["rss_after"] - records[0]["rss_before"] >= 30 * MIB, records[0]
