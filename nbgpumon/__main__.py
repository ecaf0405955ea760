"""nbgpumon's command line, ``python -m nbgpumon``, with three subcommands.

``python -m nbgpumon report PATH -o report.html``: a recording as a self-contained HTML page.
``python -m nbgpumon compare A B [-o FILE] [--check]``: two recordings cell by cell.
``python -m nbgpumon serve [--port P] [--host H] [SCRIPT [ARGS...]]``: the Prometheus exporter,
around a script (in each rank of a torchrun job) or on its own until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
from pathlib import Path
from typing import NoReturn

from ._foundation.metrics import device_label

USAGE_ERROR = 2  # what argparse, and Python itself, exit with for a command line it can't take
REGRESSED = 3  # compare --check: a cell of B regressed against A


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A bad command line: one line (what is wrong, where help is) and exit code 2."""
        self.exit(USAGE_ERROR, f"{self.prog}: {message} ({self.prog} -h for help)\n")


def _framework_labels() -> str:
    """ "torch, JAX, CuPy": the framework plug-ins' labels, for the help."""
    from ._sources.frameworks import frameworks

    return ", ".join(f.label for f in frameworks())


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m nbgpumon",
        description="Write an nbgpumon recording (made with %gpumon record PATH) as one "
        "HTML page that opens without a network: python -m nbgpumon report PATH -o report.html; "
        "or serve this process's GPU metrics for Prometheus: python -m nbgpumon serve",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    report = commands.add_parser("report", help="write a recording as one HTML page")
    report.add_argument("path", help="the SQLite file %%gpumon record wrote")
    report.add_argument("-o", "--output", default="report.html", help="the HTML file to write")
    report.add_argument("--session", type=int, default=None, help="session id (default: newest)")
    compare = commands.add_parser(
        "compare",
        help="compare two recordings cell by cell",
        description="Print recording B against recording A, cell by cell (nbgpumon.compare).",
    )
    compare.add_argument("a", help="the first run's recording")
    compare.add_argument("b", help="the second run's recording")
    compare.add_argument("-o", "--output", help="also write the comparison as an HTML page")
    compare.add_argument(
        "--check", action="store_true", help=f"exit with {REGRESSED} if a cell regressed"
    )
    serve = commands.add_parser(
        "serve",
        help="serve GPU metrics for Prometheus, around a script or until Ctrl-C",
        description="Serve this process's GPU metrics for Prometheus at "
        "http://HOST:PORT/metrics. With SCRIPT, run it here as `python SCRIPT ARGS...` would, "
        f"so its own allocator ({_framework_labels()}) is exported too, and exit with its exit "
        "code: torchrun --nproc-per-node 8 -m nbgpumon serve train.py --lr 3e-4. Each rank "
        "serves on PORT + LOCAL_RANK when LOCAL_RANK is set. Without SCRIPT, serve "
        f"{device_label()}'s and the host's figures until Ctrl-C.",
    )
    serve.add_argument("--port", type=int, default=None, help="the port (default 9476)")
    serve.add_argument(
        "--host", default=None, help="the address to listen on (default 127.0.0.1: this machine)"
    )
    serve.add_argument("script", nargs="?", help="a Python script to run while serving")
    serve.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.port, args.host, args.script, args.args)
    if args.command == "compare":
        return _compare(args.a, args.b, args.output, args.check)

    from ._api.recorded import load_recorded as load
    from ._foundation.errors import UsageError
    from ._foundation.new_files import write_new_text

    try:
        session = load(args.path, args.session)
    except (OSError, ValueError) as exc:
        print(f"nbgpumon: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a file that is not a recording: one line, not a traceback
        print(f"nbgpumon: cannot read {args.path} as a recording: {exc}", file=sys.stderr)
        return 1
    if session.damage:  # a file cut short: say what is missing, then write what was read
        print(f"nbgpumon: {session.damage}", file=sys.stderr)
    try:
        out = write_new_text(args.output, session.report_html())
    except UsageError as exc:
        print(f"nbgpumon: {exc}", file=sys.stderr)
        return 1
    from ._views.words.recording_cells import cells_words, earlier_cells

    cells = cells_words(session.records, earlier_cells(session))
    print(f"nbgpumon: wrote {out} (session {session.session_id}, {cells})")
    return 0


def _compare(a: str, b: str, output: str | None, check: bool) -> int:
    from ._api.compare import compare
    from ._foundation.errors import RecordingError, UsageError
    from ._foundation.new_files import write_new_text
    from ._session.analysis.comparison import Thresholds

    try:
        comparison = compare(a, b, None, Thresholds())
        print(comparison)  # the whole table (its repr is short)
        if output:
            print(f"nbgpumon: wrote {write_new_text(output, comparison.report_html())}")
    except (RecordingError, UsageError) as exc:
        print(f"nbgpumon: {exc}", file=sys.stderr)
        return 1
    return REGRESSED if check and comparison.regressions else 0


def _serve(port: int | None, host: str | None, script: str | None, script_args: list[str]) -> int:
    from ._api import current
    from ._api.exporter import DEFAULT_PORT, rank_port
    from ._foundation.errors import UsageError
    from ._session.session import no_shell

    prog = "python -m nbgpumon serve"
    if script is not None and not Path(script).is_file():
        print(f"{prog}: no script at {script}", file=sys.stderr)
        return USAGE_ERROR
    chosen, note = rank_port(DEFAULT_PORT if port is None else port)
    mon = current.started(shell=no_shell)
    try:
        try:
            line = mon.export(chosen, host, retry="--port PORT picks another")
        except UsageError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return USAGE_ERROR
        rank = f"rank {os.environ['RANK']}: " if os.environ.get("RANK") else ""
        if script is None:
            return _until_stopped(
                f"nbgpumon: {rank}{line} ({note + '; ' if note else ''}{device_label()} and host "
                "metrics; Ctrl-C stops)"
            )
        print(f"nbgpumon: {rank}{line}{f' ({note})' if note else ''} while {script} runs",
              file=sys.stderr)  # fmt: skip
        return _run_script(script, script_args)
    finally:
        mon.close()


def _until_stopped(line: str) -> int:
    """Say ``line``, then serve until Ctrl-C or SIGTERM (a scheduler's stop); exit code 0
    either way, however soon after the line it comes."""
    stop = threading.Event()
    # Handlers of its own, whatever it inherited: a job a script starts with `&` (nohup, CI)
    # has SIGINT ignored, and Python then sets no KeyboardInterrupt for it.
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOPS}
    try:
        print(line, file=sys.stderr)
        while not stop.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _run_script(script: str, script_args: list[str]) -> int:
    """Run ``script`` as ``python script ARGS`` would (``sys.argv``, ``__main__``, its folder
    first on ``sys.path``); its exit code (1 after an exception, whose traceback Python's own
    way prints)."""
    # Ctrl-C is a KeyboardInterrupt in the script and SIGTERM ends it, as in a terminal, even
    # where they were inherited ignored (a background job): the exporter must not outlive it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.argv = [script, *script_args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)  # sys.exit("message"), as Python prints it
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
