"""``%gpumon``'s subcommands are data (``_ipython/subcommands.py``): the help lists each one
from the table, one check parses every subcommand's arguments, and neither names a framework."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from nbgpumon._ipython.magics import GPUMonMagics
from nbgpumon._ipython.subcommands import BY_NAME, COMMAND_NAMES, SUBCOMMANDS, parse_arguments

PACKAGE = Path(__file__).resolve().parents[1] / "nbgpumon" / "_ipython"


def test_every_subcommand_has_its_method_and_the_help_lists_each_one():
    doc = GPUMonMagics.gpumon.__doc__
    assert doc.startswith("%gpumon [--static] [command] [args ...]\n")
    for command in SUBCOMMANDS:
        assert callable(getattr(GPUMonMagics, command.method)), command.name
        for synopsis, text in command.help:
            assert f"  {synopsis}" in doc and text.split("\n")[0] in doc
    assert "  %gpumon summary on|off  print a one-line summary after every cell\n" in doc
    assert set(COMMAND_NAMES) == {c.name for c in SUBCOMMANDS} - {"show", "--static"}


@pytest.mark.parametrize(
    ("name", "words", "error"),
    [
        ("cells", ["0"], "usage: %gpumon cells [N], N a positive whole number"),
        ("cells", ["1", "2"], "usage: %gpumon cells [N], N a positive whole number"),
        ("trace", [], "usage: %gpumon trace on|off"),
        ("export", ["9x"], "usage: %gpumon export [PORT|off], PORT a number from 1 to 65535"),
        ("status", ["now"], "%gpumon status takes no arguments (got 'now'); %gpumon? lists"),
        ("show", ["x"], "%gpumon  takes no arguments (got 'x')"),
    ],
)
def test_one_check_refuses_each_subcommand_s_wrong_arguments(name, words, error):
    with pytest.raises(UsageError) as refused:
        parse_arguments(BY_NAME[name], words)
    assert str(refused.value).startswith(error)


@pytest.mark.parametrize(
    ("name", "words"),
    [("cells", []), ("cells", ["5"]), ("trace", ["on"]), ("nvtx", []), ("export", ["off"]),
     ("holders", ["cuda:1"]), ("record", ["my", "run.sqlite"]), ("status", [])],
)  # fmt: skip
def test_what_a_subcommand_takes_passes_as_typed(name, words):
    assert parse_arguments(BY_NAME[name], words) == words


def test_the_magic_names_no_framework_outside_docstrings():
    framework = re.compile(r"\b(torch|jax|cupy)\b", re.IGNORECASE)
    for path in (PACKAGE / "magics.py", PACKAGE / "subcommands.py"):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        named = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and framework.search(node.value)
        ]  # fmt: skip
        assert named == [], path.name
