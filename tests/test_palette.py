"""One palette: the views take every colour from ``_views/palette.py`` (a metric's own colour
stays with its declaration, outside ``_views/``), and the live chart's copies of its roles
agree with it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from js_code import js_code

from nbgpumon._views import palette

REPO = Path(__file__).resolve().parents[1]
VIEWS = REPO / "nbgpumon" / "_views"

_NAMES = (
    "black|white|silver|gr[ae]y|lightgr[ae]y|darkgr[ae]y|dimgr[ae]y|red|maroon|crimson|tomato|"
    "coral|salmon|orange|gold|yellow|olive|lime|green|teal|aqua|cyan|blue|navy|steelblue|"
    "indigo|violet|purple|fuchsia|magenta|pink|brown"
)
_COLOUR = re.compile(
    r"(?<![&\w])#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})\b"  # #b279a2, #ddd
    r"|\b(?:rgba?|hsla?)\("  # rgb(76, 120, 168)
    rf"|[=:]\s*[\"']?(?:{_NAMES})\b(?!-)"  # fill="white", color:red
    rf"|\b(?:solid|dashed|dotted)\s+(?:{_NAMES})\b",  # border:1px solid grey
    re.IGNORECASE,
)
_NAMED = re.compile(rf"(?:{_NAMES})", re.IGNORECASE)


def colour_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string in Python ``source`` that writes a colour: a hex or
    functional colour anywhere in it, a colour name as an attribute's or property's value,
    or a string that is only a colour name (``colors=["red"]``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if _COLOUR.search(text) or _NAMED.fullmatch(text.strip()):
                found.append((node.lineno, text))
    return sorted(found)


def test_no_view_module_but_the_palette_writes_a_colour():
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {text!r}"
        for path in sorted(VIEWS.rglob("*.py"))
        if path.name != "palette.py"
        for line, text in colour_literals(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "name the colour in _views/palette.py:\n" + "\n".join(offenders)


def test_the_scan_finds_each_way_a_view_could_write_a_colour():
    source = """
a = "#b279a2"
b = f'<line stroke="#ccc" x1="{x}"/>'
c = "border-bottom:1px solid #DDDDDD80"
d = "box-shadow:0 1px 4px rgba(0,0,0,.25)"
e = f'<rect fill="white" width="{w}"/>'
f = "th{color:grey}"
g = bq.Lines(colors=["red"])
h = "border-left:2px dashed steelblue"
"""
    assert [line for line, _ in colour_literals(source)] == [2, 3, 4, 5, 6, 7, 8, 9]


def test_words_that_merely_look_like_colours_are_not_found():
    source = """
a = "white-space:pre;text-align:left"
b = f"{name} #{seen[name]}"
c = "&#123; cell 12"
d = "the red line is the peak"
e = 'fill="none"'
"""
    assert colour_literals(source) == []


def _code_of(module: str) -> str:
    """A front-end module's code without its comments, its lines kept."""
    lines: dict[int, str] = {}
    for number, part in js_code((REPO / "js" / "src" / module).read_text(encoding="utf-8")):
        lines[number] = lines.get(number, "") + part
    return "\n".join(lines.values())


def test_the_live_charts_kind_colours_are_those_of_explains_bars():
    code = _code_of("kinds.js")
    table = re.search(r"KIND_COLORS = \{(.*?)\}", code, re.DOTALL)
    assert table is not None
    pairs = re.findall(r"^\s*\"?(\w[\w ]*?)\"?: \"(#[0-9a-f]{6})\"", table.group(1), re.MULTILINE)
    assert len(pairs) >= 8
    assert {kind: colour for kind, colour in pairs}.items() <= palette.CATEGORY_COLORS.items()
    other = re.search(r"OTHER_COLOR = \"(#[0-9a-f]{6})\"", code)
    assert other is not None and other.group(1) in palette.RESERVE_GREYS


def test_the_live_charts_line_cycle_is_the_palettes():
    code = _code_of("chart.js")
    cycle = re.search(r"export const PALETTE = \[(.*?)\];", code)
    assert cycle is not None
    assert tuple(re.findall(r"#[0-9a-f]{6}", cycle.group(1))) == palette.LINE_CYCLE
