"""Terminal IPython, as a person types into it: what it prints around nbgpumon's own lines."""

from __future__ import annotations

import subprocess
import sys

SESSION = """\
%load_ext nbgpumon
import sys; print('PSUTIL', 'psutil' in sys.modules)
%gpumon summary on
%config GPUMon.interval = 1e9
%config GPUMon.interval
x = 1
exit
"""


def _terminal(stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor",
         "--TerminalInteractiveShell.confirm_exit=False"],
        input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


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


def test_gpumon_in_a_terminal_prints_the_charts_text_not_a_widget_repr():
    out = _terminal("%load_ext nbgpumon\n%gpumon\nexit\n")
    assert "nbgpumon live chart (sampling every 0.1 s" in out, out
    assert "GPUMonWidget(" not in out and "application/vnd.jupyter" not in out, out
