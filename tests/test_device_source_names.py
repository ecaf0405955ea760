"""NVML is one device source, not the spine: no module outside its home
(``nbgpumon/_sources/devices/nvml/``) names it in an identifier, an attribute, an import or a
string that is not a docstring. Comments and docstrings may say "NVML" (they explain); code
asks the device source by role and takes the word from its label."""

from __future__ import annotations

import ast
from pathlib import Path

from js_code import js_code

PACKAGE = Path(__file__).resolve().parents[1] / "nbgpumon"
HOME = Path("_sources", "devices", "nvml")  # NVML's device source, under the package
WORD = "nvml"

# What still names NVML outside its home, by (file under nbgpumon/, the name or string), each
# with why; a name that is gone from its file fails the test too, so the list stays true.
ALLOWED: dict[tuple[str, str], str] = {
    # the devices registry, which imports the built-in plug-in for its registration, and the
    # fault tests' boundary (a fake NVML module: Session(nvml_module=...))
    ("_sources/devices/__init__.py", "nvml"): "the built-in plug-in, imported to register",
    ("_sources/devices/__init__.py", "_nvml"): "the built-in plug-in, imported to register",
    ("_session/session.py", "nvml_module"): "the fault tests' fake library, passed to it",
    # public names of nbgpumon 0.1 (docs/python-api.md): read-only aliases, and the old keys
    # of records in recordings made before the device-source protocol (they must load)
    ("_ledger/records.py", "nvml_index"): "alias of DeviceUsage.index; old recordings' key",
    ("_ledger/records.py", "nvml_used_before"): "alias, and old recordings' key",
    ("_ledger/records.py", "nvml_used_after"): "alias, and old recordings' key",
    ("_ledger/records.py", "nvml_used_delta"): "alias of DeviceUsage.device_used_delta",
    ("_ledger/records.py", "nvml_unavailable"): "alias, and old recordings' key",
    # cells_frame()'s and the recording's cells columns (gpu0.nvml_used_delta): public
    ("_ledger/rows.py", "nvml_used_before"): "a public column name, kept",
    ("_ledger/rows.py", "nvml_used_after"): "a public column name, kept",
    ("_ledger/rows.py", "nvml_used_delta"): "a public column name, kept",
    # schema 1's files named their columns without the source: frozen, as those files are
    ("_recording/schema.py", "nvml"): "schema 1's metric names, by the source that read them",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names(node: ast.AST) -> list[str]:
    """The identifiers and strings ``node`` itself writes."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute | ast.keyword):
        return [node.attr if isinstance(node, ast.Attribute) else node.arg or ""]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def naming(source: str) -> list[tuple[int, str]]:
    """(line, name or string) for each place ``source`` names NVML in code."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (getattr(node, "lineno", 0), name)
        for node in ast.walk(tree)
        if id(node) not in docs
        for name in _names(node)
        if WORD in name.lower()
    ]


def scan(package: Path = PACKAGE) -> dict[tuple[str, str], list[int]]:
    """Where NVML is named outside its home: (file, name) -> lines."""
    found: dict[tuple[str, str], list[int]] = {}
    home = package / HOME
    for path in sorted(package.rglob("*.py")):
        if home in path.parents:
            continue
        where = path.relative_to(package).as_posix()
        for line, name in naming(path.read_text(encoding="utf-8")):
            found.setdefault((where, name), []).append(line)
    return found


def test_nothing_outside_the_nvml_device_source_names_nvml():
    found = scan()
    unexpected = {key: lines for key, lines in found.items() if key not in ALLOWED}
    assert not unexpected, "\n".join(f"{f}:{ln}: {n!r}" for (f, n), ln in unexpected.items())
    gone = [key for key in ALLOWED if key not in found]
    assert not gone, f"allowed but no longer there (shrink ALLOWED): {gone}"


def test_the_scan_finds_a_name_a_string_and_an_import_but_not_a_docstring_or_comment():
    code = (
        '"""NVML in a docstring is fine."""\n'
        "from nbgpumon._sources.devices.nvml import NvmlSource  # a comment: fine too\n"
        "def f(session):\n"
        '    """Asks NVML."""\n'
        "    print('NVML says')\n"
        "    return session.nvml.devices, nvml_used\n"
    )
    named = {name for _, name in naming(code)}
    assert named == {
        "nbgpumon._sources.devices.nvml",
        "NvmlSource",
        "NVML says",
        "nvml",
        "nvml_used",
    }


def test_the_scan_catches_a_module_that_reads_nvml_by_name(tmp_path):
    wrong = tmp_path / "nbgpumon" / "_session"
    wrong.mkdir(parents=True)
    (wrong / "status.py").write_text("def line(mon):\n    return mon.nvml.status\n")
    home = tmp_path / "nbgpumon" / "_sources" / "devices" / "nvml"
    home.mkdir(parents=True)
    (home / "source.py").write_text("name = 'nvml'\n")  # at home: allowed
    assert scan(tmp_path / "nbgpumon") == {("_session/status.py", "nvml"): [2]}


def js_naming(source: str) -> list[int]:
    """The lines of a front-end module whose code (not its comments) says "nvml"."""
    return [n for n, code in js_code(source) if WORD in code.lower()]


def test_the_front_end_asks_for_the_device_group_not_nvml():
    """The browser finds the device's columns by their ``group`` ("device") and ``metric``."""
    front = PACKAGE.parent / "js" / "src"
    found = {
        path.name: lines
        for path in sorted(front.glob("*.js"))
        if (lines := js_naming(path.read_text(encoding="utf-8")))
    }
    assert not found, found


def test_the_front_end_scan_reads_code_and_not_comments():
    code = '// NVML says\n/* nvml\n */ const used = /^gpu\\d+\\.nvml\\.mem_used$/;\nf("nvml");\n'
    assert js_naming(code) == [3, 4]
