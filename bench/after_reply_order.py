"""Whether a quiet cell's put-off end begins after the client has the cell's idle status (issue 43).

A kernel finishes a quiet cell's end on its event loop a moment after the cell
(``nbgpumon/_ipython/after_reply.py``): by default queued on ipykernel's IOPub thread behind the
cell's idle status (``idle``), else after a fixed delay (``SETTLE``). The reply and the idle
status go out through the kernel's other threads, which need the GIL: work that begins before
they have sent them holds them back, and the client waits for it after all. This drives one
fresh kernel per way (``--settles``: ``idle``, or a delay in ms with no IOPub thread to queue
behind) through ``--cells`` trivial cells (``bench/cell_cost.py``'s, a pause of ``--pause`` s
between them, as a user's), notes the monotonic clock (one clock for both processes on Linux)
when the client receives each cell's idle status and, in the kernel, when each put-off end
begins, and counts the cells whose end began after their idle had arrived. (Queued behind the
idle status, an end may begin while that status is still on its way to the client: a negative
lead of a fraction of a millisecond there holds nothing back.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import result_file
from cell_cost import KINDS, run, start

# In the kernel: the delay under test, and the instant each put-off end begins.
_PROBE = """
import time as _time, types as _types, nbgpumon as _nbg, nbgpumon._ipython.after_reply as _after
from nbgpumon._ipython import extension as _extension
_shell = get_ipython()
if {settle!r} != "idle":  # (a kernel of the same loop, no IOPub thread: the fixed delay)
    _after.SETTLE = float({settle!r}) / 1e3
    _shell = _types.SimpleNamespace(kernel=_types.SimpleNamespace(io_loop=_shell.kernel.io_loop))
_pipeline = _nbg.monitor()._session.cells_pipeline
_began = []
_finish = _pipeline.finish_pending
def _timed_finish():
    if _pipeline._pending is not None:
        _began.append(_time.monotonic())
    _finish()
_pipeline.finish_pending = _timed_finish
_extension._wiring["hooks"]._after_reply = _after.after_reply_of(_shell)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cells", type=int, default=150, help="timed cells per kernel")
    parser.add_argument("--pause", type=float, default=0.03, help="seconds between cells")
    parser.add_argument(
        "--settles", default="idle,0,2,10", help="idle (the default way) or delays, in ms"
    )


def idle_at(client: Any, code: str) -> float:
    """Run ``code``; the monotonic time at which its idle status arrived."""
    run(client, code)  # (it returns as the idle status arrives)
    return time.monotonic()


def one_delay(settle: str, cells: int, pause: float) -> list[float]:
    """Milliseconds from each cell's idle at the client to the start of its put-off end."""
    kind = KINDS["trivial"]
    manager, client = start(None)
    try:
        for code in ["%load_ext nbgpumon", *kind.setup, _PROBE.format(settle=settle)]:
            idle_at(client, code)
        idles = []
        for _ in range(cells):
            idles.append(idle_at(client, kind.cell))
            time.sleep(pause)  # (a user's pause: the put-off end is not hurried by a next cell)
        # (a cell of its own: its start finishes a last put-off end, after those timed)
        began = json.loads(run(client, "print(__import__('json').dumps(_began))")[1])
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    began = began[-len(idles) :]
    return [(b - i) * 1e3 for b, i in zip(began, idles[-len(began) :], strict=True)]


def main() -> None:
    args = result_file.parse_args(__doc__.splitlines()[0], add_arguments)
    if args.quick:
        args.cells = 30
    result = result_file.Result("after_reply_order", args)
    for settle in args.settles.split(","):
        leads = one_delay(settle, args.cells, args.pause)
        after = sum(1 for lead in leads if lead > 0)
        note = f"{after} of {len(leads)} cells; median lead {statistics.median(leads):+.3f} ms"
        result.log(f"settle {settle}: the end began after the client's idle in {note}")
        result.add(
            f"settle {settle}: ends begun after the idle", after / len(leads), "", None, note
        )
        result.details[f"leads, settle {settle}"] = leads
    result.finish()


if __name__ == "__main__":
    main()
