"""The ``%gpumon`` magic's wiring to the monitor, with no logic of its own."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from IPython.utils.text import DollarFormatter

from .._api.exporter import DEFAULT_PORT
from .._api.monitor import Monitor
from .._foundation.errors import RecordingError
from .._foundation.errors import UsageError as Problem
from .._ledger.ledger import MAX_LABEL
from .._session.config import GPUMon
from .._session.labels import check_label_length
from .._views.memory.holders import holders_view
from .._views.status.snapshot import cluster_view, snapshot_view, status_view
from .._views.widget.front_end import front_end_drops_thread_messages
from .._views.words.cells_table import cells_table
from .shell import in_terminal
from .subcommands import BY_NAME, COMMAND_NAMES, HELP, LINE, help_text, parse_arguments

if TYPE_CHECKING:
    from .._api.recorded import Recorded

# Colab shows no widget update sent from a background thread (googlecolab/colabtools#3373),
# and the chart's samples come from the sampler's thread: there, %gpumon is the picture.
COLAB_NOTE = (
    "nbgpumon: in Colab the chart is a picture (%gpumon --static), redrawn after every cell: "
    "Colab does not show widget updates sent from a background thread"
)
# %gpumon report in a terminal, with no recording to write a page of
NO_RECORDING = (
    "nbgpumon: not recording, so there is no report page to write: %gpumon record PATH "
    "records from now on and %gpumon report then writes its page (or %gpumon report PATH, "
    "of an earlier recording)"
)
MAX_LINE = 8192  # characters: far more than any command needs, and quick to parse


def _described(magic: Callable[..., object]) -> Callable[..., object]:
    # before magic_arguments() reads it: the help that %gpumon? shows, from the table
    magic.__doc__ = help_text()
    return magic


@magics_class
class GPUMonMagics(Magics):
    """The ``%gpumon`` line magic."""

    def __init__(self, shell, current: Callable[[], Monitor | None]) -> None:
        super().__init__(shell)
        self._current = current  # the loaded monitor, looked up per call (reload-safe)

    @magic_arguments()
    @argument(
        "--static",
        action="store_true",
        help="a picture updated in place about once a second instead of the widget",
    )
    @argument("command", nargs="?", default="show", help="one of the commands above")
    @argument("args", nargs="*", help="the command's arguments")
    @no_var_expand  # IPython's $-expansion of a 1 MB line takes minutes: bounded, then expanded
    @line_cell_magic
    @_described
    def gpumon(self, line: str = "", cell: str | None = None):
        # its docstring, what %gpumon? shows, is written from subcommands.py (_described)
        try:
            return self._run(line, cell)
        except (Problem, RecordingError) as exc:  # the package's own errors: one line
            raise UsageError(str(exc)) from None

    def _run(self, line: str, cell: str | None) -> None:
        if len(line) > MAX_LINE:
            raise UsageError(
                f"the %gpumon line is {len(line):,} characters long; it takes at most "
                f"{MAX_LINE:,} (a mark label at most {MAX_LABEL:,})"
            )
        name, _, rest = line.strip().partition(" ")
        verbatim = BY_NAME.get(name)
        if verbatim is not None and verbatim.takes == LINE and cell is None:
            # a mark's label is the rest of the line as typed; cluster's options hold quotes
            return getattr(self, verbatim.method)(self._loaded(), rest)
        _refuse_unknown_options(line)
        try:
            args = parse_argstring(self.gpumon, line)
        except ValueError as exc:  # shlex's: an unclosed quote, in any command's arguments
            raise UsageError(f"{exc} in %gpumon {line.strip()}; {HELP}") from None
        mon = self._loaded()
        if cell is not None or args.command == "profile":
            return self._profile(args.command, args.args, cell)
        if args.command != "show" and args.command not in COMMAND_NAMES:
            raise UsageError(_unknown_command(args.command))
        if args.static and args.command != "show":
            raise UsageError(f"--static goes with plain %gpumon only; {HELP}")
        command = BY_NAME["--static" if args.static else args.command]
        if command.takes == LINE:  # only after an option, which argparse has taken off
            return getattr(self, command.method)(mon, " ".join(args.args))
        return getattr(self, command.method)(mon, parse_arguments(command, args.args))

    def _loaded(self) -> Monitor:
        mon = self._current()
        if mon is None or mon.closed:
            raise UsageError("nbgpumon is not loaded: run %load_ext nbgpumon first")
        return mon

    # -- commands -------------------------------------------------------------------------
    def _show(self, mon: Monitor, rest: list[str]) -> None:
        if in_terminal(self.shell):
            self._print_view(mon)
        elif front_end_drops_thread_messages():  # (Colab's)
            print(COLAB_NOTE)
            self._static(mon, rest)
        else:
            display(mon.widget())

    def _static(self, mon: Monitor, rest: list[str]) -> None:
        if in_terminal(self.shell):
            self._print_view(mon)
        else:
            mon.static_view(display)

    def _print_view(self, mon: Monitor) -> None:
        """The chart's text, once, in this cell: a terminal cannot redraw what it printed, so
        nothing updates it later (no widget, no display to update, nothing from a thread)."""
        from .._views.widget.static_view import terminal_view

        mon.wait_for_samples()  # (run at once after %load_ext: the first is a moment away)
        print(terminal_view(mon.data))

    def _snapshot(self, mon: Monitor, rest: list[str]) -> None:
        mon.wait_for_samples()  # (run at once after %load_ext: the first is a moment away)
        display(snapshot_view(mon.data))

    def _status(self, mon: Monitor, rest: list[str]) -> None:
        mon.wait_for_samples()
        display(status_view(mon.data))

    def _summary(self, mon: Monitor, rest: list[str]) -> None:
        if rest:
            mon.config.summary = rest[0] == "on"
        print(f"nbgpumon: summary after each cell is {'on' if mon.config.summary else 'off'}")

    def _cells(self, mon: Monitor, rest: list[str]) -> None:
        count = int(rest[0]) if rest else 20
        display(cells_table(mon.cells()[-count:]))

    def _holders(self, mon: Monitor, rest: list[str]) -> None:
        display(holders_view(mon.holders(rest[0] if rest else None)))

    def _explain(self, mon: Monitor, rest: list[str]) -> None:
        display(mon.explain(int(rest[0]) if rest else None))

    def _free(self, mon: Monitor, rest: list[str]) -> None:
        print(mon.free())

    def _record(self, mon: Monitor, rest: list[str]) -> None:
        if not rest:
            print(f"nbgpumon: {mon.tell_recording() or 'not recording'}")
            return
        path = self._path(rest)
        print(f"nbgpumon: {mon.record(None if path == 'off' else path)}")

    def _profile(self, command: str, rest: list[str], cell: str | None) -> None:
        if command != "profile":
            raise UsageError(f"%%gpumon runs a cell only as %%gpumon profile [N]; {HELP}")
        if cell is None:
            raise UsageError("profile is a cell magic: put %%gpumon profile [N] atop the cell")
        parse_arguments(BY_NAME["profile"], rest)
        if not cell.strip():
            raise UsageError("%%gpumon profile needs code in the cell below it")
        from .._session.controls.profile_run import profile_cell
        from .._views.report.profile import profile_result

        display(profile_result(profile_cell(self.shell, cell, int(rest[0]) if rest else 15)))

    def _report(self, mon: Monitor, rest: list[str]) -> None:
        if in_terminal(self.shell):  # a widget is a repr there: the page instead
            print(self._report_page(mon, rest))
            return
        from .._views.report.bqplot_report import report_widget

        display(report_widget(_load(self._path(rest)) if rest else mon.data))

    def _report_page(self, mon: Monitor, rest: list[str]) -> str:
        """The page ``python -m nbgpumon report`` writes, of the recording at PATH or of the
        one running, in a new file in the working folder; one line naming it (or saying how
        to get a recording)."""
        from .._foundation.new_files import write_new_named
        from .._views.words.recording_cells import cells_words, earlier_cells

        recorded = _load(self._path(rest)) if rest else mon.recorded_now()
        if recorded is None:
            return NO_RECORDING
        stem = f"nbgpumon-report-{time.strftime('%Y%m%d-%H%M%S')}"
        out = write_new_named(Path.cwd(), stem, ".html", recorded.report_html())
        cells = cells_words(recorded.records, earlier_cells(recorded))
        return (
            f"nbgpumon: wrote {out} (session {recorded.session_id} of {recorded.path}, {cells}); "
            "open it in a browser"
        )

    def _advise(self, mon: Monitor, rest: list[str]) -> None:
        if not rest:
            print(mon.advise())
            return
        print(_load(self._path(rest)).advise())

    def _compare(self, mon: Monitor, rest: list[str]) -> None:
        from .._api.compare import compare
        from .._session.analysis.comparison import Thresholds

        # expanded, then split as a shell would: "$A" keeps a path with spaces whole
        paths = _shell_words(self._expand(" ".join(rest)), "compare", COMPARE_USAGE)
        if len(paths) not in (1, 2) or not all(p.strip() for p in paths):
            raise UsageError(COMPARE_USAGE)
        runs = [_load(p) for p in paths]
        print(compare(runs[0], runs[1] if len(runs) > 1 else mon, mon, Thresholds()))  # whole

    def _whatif(self, mon: Monitor, rest: str) -> None:
        usage = BY_NAME["whatif"].usage
        words = _shell_words(rest, "whatif", usage)
        size = None
        if "--size" in words:
            at = words.index("--size")
            given = words[at + 1 : at + 2]
            if not given or not given[0].isdigit() or int(given[0]) < 1:
                raise UsageError(f"--size takes a positive whole number; {usage}")
            size = int(given[0])
            del words[at : at + 2]
        if not words:
            raise UsageError(usage)
        name, *fixes = words
        step = self.shell.user_ns.get(name)
        if not callable(step):
            raise UsageError(f"whatif: no function named {name!r} in the namespace; {usage}")
        display(mon.whatif(step, fixes or None, size))

    def _trace(self, mon: Monitor, rest: list[str]) -> None:
        print(f"nbgpumon: {mon.trace(rest[0] == 'on')}")

    def _nvtx(self, mon: Monitor, rest: list[str]) -> None:
        print(f"nbgpumon: {mon.nvtx(rest[0] == 'on' if rest else None)}")

    def _start(self, mon: Monitor, rest: list[str]) -> None:
        mon.start()
        print(f"nbgpumon: sampling every {mon.config.interval:g} s")

    def _stop(self, mon: Monitor, rest: list[str]) -> None:
        mon.stop()
        print("nbgpumon: sampler stopped; the ledger still records cells (%gpumon start resumes)")

    def _cluster(self, mon: Monitor, rest: str) -> None:
        words = _shell_words(self._expand(rest), "cluster", CLUSTER_USAGE)
        if not words:
            display(cluster_view(mon.data))
            return
        if words == ["off"]:
            print(f"nbgpumon: {mon.read_cluster(None)}")
            return
        url, matchers, host_label = words[0], [], None
        options = iter(words[1:])
        for option in options:
            value = next(options, None)
            if option not in ("--match", "--job", "--host-label") or value is None:
                raise UsageError(CLUSTER_USAGE)
            if option == "--host-label":
                host_label = value
            else:
                matchers.append(value if option == "--match" else f'job="{_quoted(value)}"')
        if url.startswith("-"):
            raise UsageError(CLUSTER_USAGE)
        print(f"nbgpumon: {mon.read_cluster(url, ', '.join(matchers), host_label)}")

    def _export(self, mon: Monitor, rest: list[str]) -> None:
        if not rest and mon.exporter_line:
            print(f"nbgpumon: exporting on {mon.exporter_line}")
            return
        if rest and rest[0] == "off":
            print(f"nbgpumon: {mon.export(None)}")
            return
        port = int(rest[0]) if rest else (mon.config.export_port or DEFAULT_PORT)
        if port == 0:
            raise UsageError("port 0 is not a port; %gpumon export off stops the exporter")
        print(f"nbgpumon: {mon.export(port)}")

    def _mark(self, mon: Monitor, label: str) -> None:
        if not label.strip():
            raise UsageError("usage: %gpumon mark LABEL")
        check_label_length("mark", label)  # before expanding too: its cost grows with the square
        mon.mark(self._expand(label))

    def _path(self, rest: list[str]) -> str:
        return _unquoted(self._expand(" ".join(rest)))

    def _expand(self, text: str) -> str:
        """``{name}`` / ``$name`` filled in from the user's namespace, as IPython does for
        other magics; %gpumon turns IPython's own expansion off to bound its cost first."""
        if "$" not in text and "{" not in text:
            return text
        try:
            return DollarFormatter().vformat(text, args=[], kwargs=self.shell.user_ns)
        except Exception:  # as IPython does: what can't be expanded stays as typed
            return text


CLUSTER_USAGE = (
    "usage: %gpumon cluster URL [--match 'LABEL=~\"REGEX\"'] [--job NAME] "
    "[--host-label LABEL] | off, "
    "e.g. %gpumon cluster http://prometheus:9090 --match 'Hostname=~\"node-1.*\"'"
)


COMPARE_USAGE = (
    "usage: %gpumon compare A [B], A and B recordings' paths (B: this session), "
    "quoted if they hold spaces"
)


def _shell_words(text: str, command: str, usage: str) -> list[str]:
    """``text`` split as a shell would (quotes keep spaces); an unclosed quote is one line."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{exc} in %gpumon {command} {text.strip()}; {usage}") from None


def _quoted(value: str) -> str:
    """``value`` inside a PromQL double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _load(path: str) -> Recorded:
    from .._api.recorded import load_recorded as load

    recorded = load(path)  # a RecordingError is one line: gpumon() shows it as a UsageError
    if recorded.damage:
        print(f"nbgpumon: {recorded.damage}")  # then what could be read is shown
    return recorded


def _unquoted(path: str) -> str:
    """A path as typed, without one pair of quotes around it: IPython keeps them, and
    ``%gpumon record ''`` must not record to a file named ``''``."""
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "'\"":
        return path[1:-1]
    return path


def _unknown_command(command: str) -> str:
    import difflib  # on a mistyped command only: not on the load's path

    close = difflib.get_close_matches(command, COMMAND_NAMES, n=1)
    hint = f"did you mean %gpumon {close[0]}? " if close else ""
    return f"unknown command {command!r}; {hint}{HELP}"


def _refuse_unknown_options(line: str) -> None:
    """Options other than --static, as one line; a setting's name says how to set it."""
    for word in line.split():
        if not word.startswith("--") or word == "--static":
            continue
        option = word.split("=", 1)[0]
        name = option[2:].replace("-", "_")
        if name in GPUMon.class_trait_names(config=True):
            raise UsageError(
                f"%gpumon has no {option} option; settings are changed with %config, "
                f"e.g. %config GPUMon.{name} = {_example(name)} (%config GPUMon lists them)"
            )
        raise UsageError(f"%gpumon has no option {option}; {HELP}")


def _example(name: str) -> str:
    default = GPUMon.class_traits()[name].default_value
    return repr(default) if isinstance(default, str) else str(default)


def _plain_help(magic: Callable[..., object]) -> None:
    # magic_arguments writes its usage as a reST literal block ("::" and an indented line);
    # %gpumon? shows the docstring as is, so make it plain text.
    doc = magic.__doc__ or ""
    if doc.startswith("::\n\n  "):
        magic.__doc__ = doc[len("::\n\n  ") :]


_plain_help(GPUMonMagics.gpumon)
