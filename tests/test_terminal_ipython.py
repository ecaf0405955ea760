"""Terminal IPython, as a person types into it: what it prints around nbgpumon's own lines.

The first tests pipe a session into IPython's stdin; the others drive a real terminal IPython
(prompt_toolkit in a pseudo-terminal, through pexpect) cell by cell, each step waiting for the
next prompt with a deadline."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from nbgpumon._foundation.new_files import write_new_named

SESSION = """\
%load_ext nbgpumon
import sys; print('PSUTIL', 'psutil' in sys.modules)
%gpumon summary on
%config GPUMon.interval = 1e9
%config GPUMon.interval
x = 1
exit
"""
HEADER = "nbgpumon live chart ("  # the first line of the chart's text
TERMINAL_NOTE = "nbgpumon: a terminal shows this once; %gpumon summary on prints a line"
DEADLINE = 90  # seconds for a prompt to come back, on a loaded machine
# the terminal's control sequences (cursor moves, colours, the window title), not text
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def _terminal(stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor",
         "--TerminalInteractiveShell.confirm_exit=False"],
        input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


class Terminal:
    """A terminal IPython in a pseudo-terminal: ``run`` types one line as a cell and returns
    what the terminal showed until the next prompt; ``shown`` is everything, as text."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, TERM="xterm", IPYTHONDIR=str(cwd / ".ipython"))
        self._log = io.StringIO()
        self._child = pexpect.spawn(
            sys.executable,
            ["-m", "IPython", "--no-banner", "--colors=NoColor",
             "--TerminalInteractiveShell.confirm_exit=False"],
            cwd=str(cwd), env=env, encoding="utf-8", timeout=DEADLINE, dimensions=(40, 400),
        )  # fmt: skip
        self._child.logfile_read = self._log
        self._count = 1
        self._child.expect(r"In \[1\]:")

    def run(self, line: str) -> str:
        self._child.sendline(line)
        self._count += 1
        self._child.expect(rf"In \[{self._count}\]:")
        return CONTROL.sub("", self._child.before)

    def exit(self) -> str:
        self._child.sendline("exit")
        self._child.expect(pexpect.EOF)
        self._child.close()
        assert self._child.exitstatus == 0, self.shown
        return CONTROL.sub("", self._child.before)

    @property
    def shown(self) -> str:
        return CONTROL.sub("", self._log.getvalue())

    def close(self) -> None:
        if self._child.isalive():
            self._child.terminate(force=True)


@pytest.fixture
def terminal(tmp_path):
    term = Terminal(tmp_path)
    yield term
    term.close()


def test_a_bad_setting_is_one_line_without_a_logging_prefix_and_exit_gets_no_summary():
    out = _terminal(SESSION)
    assert (
        "nbgpumon: GPUMon.interval must be between 0.01 and 60 seconds, not 1000000000.0" in out
    ), out
    assert "ERROR:root" not in out, out
    assert "Out[5]: 0.1" in out, out  # the setting kept its value
    assert "PSUTIL False" in out, out  # Linux reads /proc: no psutil import on the load's path
    summaries = [line for line in out.splitlines() if " host " in line and " ms" in line]
    # the summary of `x = 1` (cell 6) and none for `exit` (cell 7)
    assert any("[6] host" in line for line in summaries), out
    assert not any("[7]" in line for line in summaries), out


def test_gpumon_in_a_terminal_prints_the_charts_text_once_not_a_widget_repr():
    out = _terminal("%load_ext nbgpumon\n%gpumon\nx = 1\nexit\n")
    assert "nbgpumon live chart (sampling every 0.1 s" in out, out
    assert out.count(HEADER) == 1, out  # not again after `x = 1`, nor at `exit`
    assert TERMINAL_NOTE in out, out
    assert "GPUMonWidget(" not in out and "application/vnd.jupyter" not in out, out


def test_the_static_view_in_a_terminal_is_printed_once_in_the_cell_that_asked(terminal):
    terminal.run("%load_ext nbgpumon")
    asked = terminal.run("%gpumon --static")
    assert asked.count(HEADER) == 1, asked
    # its last line says what a terminal can show instead of a chart that moves
    lines = [line for line in asked.splitlines() if line.strip()]
    assert lines[-1].startswith(TERMINAL_NOTE), asked
    # while this cell sleeps the sampler's thread samples 20 times: it prints nothing
    assert "nbgpumon" not in terminal.run("import time; time.sleep(2)")
    assert "nbgpumon" not in terminal.run("x = 1")
    assert "nbgpumon" not in terminal.run("y = x + 1")
    terminal.exit()
    assert terminal.shown.count(HEADER) == 1, terminal.shown


def test_a_second_static_view_prints_once_too_and_the_first_stays_quiet(terminal):
    terminal.run("%load_ext nbgpumon")
    terminal.run("%gpumon --static")
    terminal.run("%gpumon summary on")
    assert terminal.run("%gpumon --static").count(HEADER) == 1
    slept = terminal.run("import time; time.sleep(1)")
    assert HEADER not in slept, slept
    assert re.search(r"^\[5\] host .* s$", slept, flags=re.MULTILINE), slept  # its summary
    terminal.exit()
    assert terminal.shown.count(HEADER) == 2, terminal.shown


def _written(shown: str) -> Path:
    (path,) = re.findall(r"^nbgpumon: wrote (\S+) \(", shown, flags=re.MULTILINE)
    return Path(path)


def test_report_in_a_terminal_writes_the_page_and_names_it_in_one_line(terminal, tmp_path):
    terminal.run("%load_ext nbgpumon")
    alone = terminal.run("%gpumon report")  # nothing recorded: how to get a recording
    said = [line for line in alone.splitlines() if line.startswith("nbgpumon:")]
    assert said == [
        "nbgpumon: not recording, so there is no report page to write: %gpumon record PATH "
        "records from now on and %gpumon report then writes its page (or %gpumon report PATH, "
        "of an earlier recording)"
    ], alone
    assert not list(tmp_path.glob("*.html"))
    terminal.run("%gpumon record run.sqlite")
    terminal.run("x = 1")
    running = terminal.run("%gpumon report")  # the running recording, as its file holds it
    page = _written(running)
    assert page.parent == tmp_path and page.name.startswith("nbgpumon-report-"), running
    assert page.read_text().startswith("<!doctype html>")
    assert "<h1>nbgpumon session 1</h1>" in page.read_text()
    terminal.run("%gpumon record off")  # (the file now holds every cell)
    recorded = terminal.run("%gpumon report run.sqlite")
    again = _written(recorded)
    assert again != page and page.exists(), recorded  # a new file, the first one kept
    assert re.search(r"\(session 1 of run\.sqlite, \d+ cells", recorded), recorded
    assert "x = 1" in again.read_text()
    terminal.exit()
    assert "Report(" not in terminal.shown and "HTML(value" not in terminal.shown


def test_a_page_whose_name_is_taken_gets_the_next_free_name(tmp_path):
    (tmp_path / "page.html").write_text("someone's")
    first = write_new_named(tmp_path, "page", ".html", "one")
    second = write_new_named(tmp_path, "page", ".html", "two")
    assert (first.name, second.name) == ("page-2.html", "page-3.html")
    assert [p.read_text() for p in (tmp_path / "page.html", first, second)] == [
        "someone's",
        "one",
        "two",
    ]


def test_with_the_summary_on_a_failing_cells_error_comes_before_its_summary(terminal):
    terminal.run("%load_ext nbgpumon")
    terminal.run("%gpumon summary on")
    shown = terminal.run("%gpumon bogus").splitlines()
    error = next(i for i, line in enumerate(shown) if line.startswith("UsageError: unknown"))
    summary = next(i for i, line in enumerate(shown) if re.match(r"\[3\] host .* error$", line))
    assert error < summary, shown
    terminal.exit()
