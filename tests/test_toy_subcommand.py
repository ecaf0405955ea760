"""docs/recipes.md's "Add a subcommand" recipe is true: one row in ``_ipython/subcommands.py``
and its ``GPUMonMagics._<name>`` method in ``_ipython/magics.py``, added to a copy of the
package and nothing else, make a command that ``%gpumon?`` lists, whose wrong argument gets
its one-line usage, and that runs, in a terminal IPython as a person types into it.

The copy runs in an IPython of its own: this process keeps the built-in commands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nbgpumon
from nbgpumon._ipython.subcommands import BY_NAME, SUBCOMMANDS

from notebook_runner import fake_nvml_env

PACKAGE = Path(nbgpumon.__file__).resolve().parent
# The recipe's two steps, as docs/recipes.md gives them: the row, last in SUBCOMMANDS...
ROW = """\
    Subcommand("toy", (("%gpumon toy [N]", "the last N cells' first lines (default 1)"),),
               (POSITIVE,), usage="usage: %gpumon toy [N], N a positive whole number"),
"""
END_OF_TABLE = "\n)  # fmt: skip\nBY_NAME = "
# ...and the method that runs it, first among the commands
METHOD = """\
    def _toy(self, mon: Monitor, rest: list[str]) -> None:
        count = int(rest[0]) if rest else 1
        print("nbgpumon: toy: " + " | ".join(r.label for r in mon.cells()[-count:]))

"""
COMMANDS = "    # -- commands " + "-" * 73 + "\n"
SESSION = """\
import nbgpumon; print("FROM", nbgpumon.__file__)
%load_ext nbgpumon
%gpumon?
x = 1
y = 2
%gpumon toy 2
%gpumon toy many
exit
"""
PROMPT = re.compile(r"^In \[\d+\]: ", re.MULTILINE)


def _copy_with_a_toy_command(root: Path) -> Path:
    """nbgpumon copied under ``root``, with the recipe followed in its two files."""
    copy = root / "nbgpumon"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    table = copy / "_ipython" / "subcommands.py"
    text = table.read_text()
    assert text.count(END_OF_TABLE) == 1
    table.write_text(text.replace(END_OF_TABLE, "\n" + ROW.rstrip("\n") + END_OF_TABLE))
    magics = copy / "_ipython" / "magics.py"
    text = magics.read_text()
    assert text.count(COMMANDS) == 1
    magics.write_text(text.replace(COMMANDS, COMMANDS + METHOD))
    return root


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> tuple[list[str], str]:
    """What the terminal printed after each line of SESSION, in order, and its stderr (where
    IPython shows a UsageError)."""
    root = _copy_with_a_toy_command(tmp_path_factory.mktemp("with_toy"))
    env = dict(os.environ, **fake_nvml_env(devices=[{"name": "Fake H200", "uuid": "GPU-aaaa"}]))
    env["PYTHONPATH"] = os.pathsep.join([str(root), env["PYTHONPATH"]])
    env["IPYTHONDIR"] = str(root / ".ipython")  # no profile or history of the user's
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor",
         "--TerminalInteractiveShell.confirm_exit=False"],
        input=SESSION, capture_output=True, text=True, timeout=120, env=env, cwd=root,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    after = PROMPT.split(done.stdout)[1:]  # one entry per line typed
    assert after[0].split() == ["FROM", str(root / "nbgpumon" / "__init__.py")]
    return after, done.stderr


def test_this_process_has_no_toy_command():
    assert "toy" not in BY_NAME


def test_the_help_lists_the_new_command_from_its_row(shown):
    printed, _ = shown
    help_text = printed[2]
    assert help_text.startswith("Docstring:\n%gpumon [--static] [command] [args ...]\n")
    toy = "  %gpumon toy [N]         the last N cells' first lines (default 1)\n"
    # listed where its row is: after the built-in table's last entry, before the settings
    last_built_in = SUBCOMMANDS[-1].help[-1][0]
    assert help_text.index(f"  {last_built_in}") < help_text.index(toy)
    assert help_text.index(toy) < help_text.index("Settings: %config GPUMon")


def test_the_new_command_runs_with_its_argument(shown):
    printed, _ = shown
    assert printed[5].strip() == "nbgpumon: toy: x = 1 | y = 2"


def test_a_wrong_argument_gets_the_one_line_usage(shown):
    printed, stderr = shown
    assert printed[6].strip() == ""
    # one line, no traceback (anything else IPython may warn of on stderr is not the command's)
    usage = "UsageError: usage: %gpumon toy [N], N a positive whole number"
    assert stderr.splitlines().count(usage) == 1, stderr
    assert "Traceback" not in stderr and "%gpumon toy" not in stderr.replace(usage, ""), stderr
