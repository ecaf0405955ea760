"""compare pairs a magic only with the same magic and subcommand, and no cell on a shared
beginning alone: two runs recorded in real kernels, each slot between unchanged cells holding
another pair (the pairs by themselves are in tests/test_matching.py)."""

from __future__ import annotations

import pytest

import nbgpumon
from nbgpumon._ledger.matching import EDITED, ONLY_IN_A, ONLY_IN_B, SAME_SOURCE

from notebook_runner import run_cells

# (A's cell, B's cell, how they pair), each slot after an unchanged cell
SLOTS = [
    ("x = f(3)", "x = f(4)", EDITED),
    ("%gpumon cells 5", "%gpumon cells 10", EDITED),
    ("%gpumon cells -5", "%gpumon record ''", None),  # difflib: 0.61
    ("%gpumon advise", "%gpumon trace on", None),  # 0.67
]


def _run(path, side: int) -> None:
    cells = ["%load_ext nbgpumon", f"%gpumon record {path}", "def f(n):\n    return n"]
    for k, slot in enumerate(SLOTS):
        cells += [f"anchor{k} = {k}", slot[side]]
    runs = run_cells([*cells, "done = True", "%gpumon record off"])
    # %gpumon record '' is refused with a UsageError: a cell all the same
    failed = [r.source for r in runs if r.error and r.source != "%gpumon record ''"]
    assert not failed, failed


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("magics")
    _run(tmp / "a.sqlite", 0)
    _run(tmp / "b.sqlite", 1)
    return nbgpumon.compare(tmp / "a.sqlite", tmp / "b.sqlite")


def test_a_magic_pairs_only_with_the_same_magic_and_an_edited_cell_still_pairs(comparison):
    how = {
        (c.pair.a.label if c.pair.a else None, c.pair.b.label if c.pair.b else None): c.pair.how
        for c in comparison.changes
        if c.pair.kind == "cell"
    }
    for a, b, paired in SLOTS:
        if paired:
            assert how.get((a, b)) == paired, how
        else:
            assert how.get((a, None)) == ONLY_IN_A and how.get((None, b)) == ONLY_IN_B, how
    anchors = [label for (label, other), kind in how.items() if kind == SAME_SOURCE]
    assert {f"anchor{k} = {k}" for k in range(len(SLOTS))} <= set(anchors)
