"""Words are made above the data: no module below the views, the API and the IPython wiring
prints (invariant 2 and 15: the lower layers hand facts up, and what is said in a cell is
printed by the layer that words it). Read with ``ast``, so a ``print`` anywhere in a module
counts, however it is reached."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nbgpumon"
# the layers that word and print; ``__main__`` is the command line's own wiring
ABOVE = ("_views", "_api", "_ipython", "__main__.py", "__init__.py")


def below_the_views() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in ABOVE)


def prints_in(path: Path) -> list[int]:
    """The lines of ``path`` that call ``print`` (the builtin, by its name)."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]


def test_the_layers_below_the_views_are_found():
    found = {p.relative_to(PACKAGE).parts[0] for p in below_the_views()}
    assert found == {
        "_foundation", "_sources", "_sampling", "_ledger", "_recording", "_forensics", "_session"
    }  # fmt: skip


def test_no_module_below_the_views_prints():
    printing = {
        str(path.relative_to(PACKAGE)): lines
        for path in below_the_views()
        if (lines := prints_in(path))
    }
    assert printing == {}, "words are printed by the layer that makes them: _views, _api, _ipython"


def test_a_print_below_the_views_is_found(tmp_path):
    wrong = tmp_path / "module.py"
    wrong.write_text("def say(x):\n    if x:\n        print(f'nbgpumon: {x}')\n")
    assert prints_in(wrong) == [3]
