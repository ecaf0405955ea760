"""No code names a framework outside its own plug-in package: the ledger, status, headroom, the
views and the front end ask the registered plug-ins (``nbgpumon._sources.frameworks``).

"Names a framework" is a registered plug-in's name, label or module (torch, JAX, CuPy), as a
whole word in any case, in an identifier, an attribute or a string that is not a docstring
(Python), or in any text outside comments (the front end's ``js/src``). Docstrings and comments
are prose: they may give a framework as an example."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from js_code import js_code

from nbgpumon._sources.frameworks import frameworks

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path("nbgpumon/_sources/frameworks")

# Where a name is right: the list of the built-ins, whose imports set their display order.
ALLOWED = {
    "nbgpumon/_sources/frameworks/__init__.py": "imports the built-in plug-ins, in display order",
}


def framework_words() -> frozenset[str]:
    """Every registered plug-in's name, label and module, lower case."""
    return frozenset(w.lower() for f in frameworks() for w in (f.name, f.label, f.module))


def _pattern(words: Iterable[str]) -> re.Pattern[str]:
    alternatives = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    # whole words: not inside a longer word ("torchrun", "jaxlib"); "_" and "." separate
    return re.compile(rf"(?<![a-z0-9])({alternatives})(?![a-z0-9])")


def named_in(text: str, pattern: re.Pattern[str]) -> str | None:
    """The framework word ``text`` holds, as written in lower case, camel case split too
    (``CupyAllocatorSource``); None for none."""
    for form in (text, re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)):
        found = pattern.search(form.lower())
        if found:
            return found.group(1)
    return None


def _prose(tree: ast.AST) -> set[int]:
    """The ids of string constants that are statements on their own: docstrings, and the
    strings under an assignment that document it."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _words(node: ast.AST, prose: set[int]) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
        return [node.value]
    return []


def python_names(source: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, str, str]]:
    """(line, the word found, what holds it) for each framework name in ``source``'s code."""
    tree = ast.parse(source)
    prose = _prose(tree)
    for node in ast.walk(tree):
        for text in _words(node, prose):
            found = named_in(text, pattern)
            if found:
                yield getattr(node, "lineno", 0), found, text


def js_names(source: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, str, str]]:
    """The same for a front-end module, its comments left out (what holds the name: its line)."""
    lines = source.splitlines()
    for number, part in js_code(source):
        found = named_in(part, pattern)
        if found:
            yield number, found, lines[number - 1].strip()


def _owner(path: str) -> str | None:
    """The plug-in package a path is inside (``torch`` for its files), or None."""
    parts = Path(path).parts
    base = PLUGINS.parts
    if parts[: len(base)] == base and len(parts) > len(base) + 1:
        return parts[len(base)]
    return None


def violations(
    root: Path, skip: Iterable[str] = (), words: frozenset[str] | None = None
) -> list[str]:
    """``file:line: word (text)`` for each framework name outside its own plug-in."""
    words = framework_words() if words is None else words
    owners = {w: f.name for f in frameworks() for w in (f.name, f.label.lower(), f.module)}
    pattern = _pattern(words)
    skipped = set(skip)
    found: list[str] = []
    files = [*sorted(root.glob("nbgpumon/**/*.py")), *sorted(root.glob("js/src/*.js"))]
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel in skipped:
            continue
        text = path.read_text(encoding="utf-8")
        names = python_names if path.suffix == ".py" else js_names
        owner = _owner(rel)
        for line, word, holder in sorted(names(text, pattern)):
            if owner is not None and owners.get(word) == owner:
                continue  # a plug-in names its own framework
            found.append(f"{rel}:{line}: {word} ({holder[:80]!r})")
    return found


def test_no_framework_is_named_outside_its_plug_in():
    found = violations(ROOT, skip=[*ALLOWED])
    assert not found, "framework names outside their plug-ins:\n" + "\n".join(found)


def test_each_file_allowed_still_names_a_framework():
    # an entry that no longer has a name to excuse goes
    for rel in ALLOWED:
        path = ROOT / rel
        assert path.exists(), rel
        names = python_names if path.suffix == ".py" else js_names
        assert any(names(path.read_text(), _pattern(framework_words()))), rel


def test_a_name_in_code_is_found_and_prose_is_not(tmp_path):
    package = tmp_path / "nbgpumon" / "_session"
    package.mkdir(parents=True)
    (package / "peaks.py").write_text(
        '"""torch\'s counters, JAX\'s pool: prose."""\n'
        "# cupy in a comment\n"
        "def note(source):\n"
        '    """CuPy in a docstring."""\n'
        '    if source.name == "torch":\n'
        "        return source.cupy_hook\n"
        "    return CupyAllocatorSource\n"
        'WORDS = "a torchrun, jaxlib: whole words only"\n'
    )
    plugin = tmp_path / "nbgpumon" / "_sources" / "frameworks" / "jax"
    plugin.mkdir(parents=True)
    (plugin / "peaks.py").write_text('NOTE = "JAX\'s peak"\nOTHER = "torch"\n')
    js = tmp_path / "js" / "src"
    js.mkdir(parents=True)
    (js / "chart.js").write_text(
        "// torch in a comment\n/* and JAX\n here */\nconst A = 1;\nconst B = new Set(['cupy']);\n"
    )
    found = violations(tmp_path)
    assert found == [
        "nbgpumon/_session/peaks.py:5: torch ('torch')",
        "nbgpumon/_session/peaks.py:6: cupy ('cupy_hook')",
        "nbgpumon/_session/peaks.py:7: cupy ('CupyAllocatorSource')",
        "nbgpumon/_sources/frameworks/jax/peaks.py:2: torch ('torch')",
        "js/src/chart.js:5: cupy (\"const B = new Set(['cupy']);\")",
    ], found
