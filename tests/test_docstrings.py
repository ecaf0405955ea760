"""Every module of nbgpumon has a docstring that leads with one plain sentence: not a label
(``name: what it is``), ended with a period in its first paragraph, about two lines at most."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nbgpumon"

# A label, not a sentence: "``Monitor``: ...", "Foundation: ...", "The ledger: ...".
_LABEL = re.compile(r"^(?:``[^`]+``|[\w.%-]+|The \w+(?: \w+)?)\s*:(?:\s|$)")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "cf.", "vs.")
# About two lines of a docstring at the line length of pyproject.toml.
FIRST_SENTENCE_LIMIT = 200


def first_sentence(docstring: str) -> str | None:
    """The first sentence of ``docstring``'s first paragraph, up to its full stop (or ``?``,
    ``!``); None when the paragraph has no sentence end. A stop inside ``literal`` is not one."""
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    in_literal = False
    i = 0
    while i < len(paragraph):
        if paragraph.startswith("``", i):
            in_literal = not in_literal
            i += 2
            continue
        at_end = i + 1 == len(paragraph) or paragraph[i + 1] == " "
        if not in_literal and paragraph[i] in ".?!" and at_end:
            sentence = paragraph[: i + 1]
            if not sentence.endswith(_ABBREVIATIONS):
                return sentence
        i += 1
    return None


def docstring_problem(docstring: str | None) -> str | None:
    """Why ``docstring`` does not lead with one plain sentence, or None when it does."""
    if not docstring:
        return "no docstring"
    first_line = docstring.splitlines()[0]
    if _LABEL.match(first_line):
        return f"starts with a label, not a sentence: {first_line[:60]!r}"
    sentence = first_sentence(docstring)
    if sentence is None:
        return "its first paragraph has no full stop"
    if len(sentence) > FIRST_SENTENCE_LIMIT:
        return f"its first sentence is {len(sentence)} characters (over two lines)"
    return None


def module_docstrings() -> list[tuple[str, str | None]]:
    return [
        (str(path.relative_to(PACKAGE.parent)), ast.get_docstring(ast.parse(path.read_text())))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_every_module_docstring_leads_with_one_plain_sentence():
    modules = module_docstrings()
    assert len(modules) > 100  # the walk found the package
    problems = [
        f"{path}: {problem}"
        for path, docstring in modules
        if (problem := docstring_problem(docstring)) is not None
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "docstring",
    [
        None,
        "",
        "``Monitor``: this process's session with its views.",
        "``%gpumon``: wiring from the magic to the monitor; no logic of its own.",
        "Foundation: what every layer may use. The metric registry, units, errors, the clock.",
        "nbgpumon: see what the GPU is doing while a notebook cell runs.",
        "The ledger: one immutable record per executed cell or tracked region.",
        "The live chart: one anywidget per session.",
        "A sentence that never ends\n\nA second paragraph.",
        "A first sentence that goes on " + "and on " * 30 + "for more than two lines.",
    ],
)
def test_a_label_a_missing_docstring_or_an_unended_sentence_is_refused(docstring):
    assert docstring_problem(docstring) is not None


@pytest.mark.parametrize(
    "docstring",
    [
        "Monitor is this process's session with its views: the live chart and the frames.",
        "Numbers as people read them: bytes, durations, percentages, counts, times of day.",
        "What a device source offers: a small core every source has and optional roles.",
        "The ``%gpumon`` magic's wiring to the monitor, with no logic of its own.",
        "Ticks at 1, 2 or 5 × 10^k, e.g. 0.5 or 20. The SVG pages draw them.",
        "Holders walked from ``Out[N]`` and ``a.grad``. More follows.",
    ],
)
def test_a_plain_first_sentence_passes(docstring):
    assert docstring_problem(docstring) is None
