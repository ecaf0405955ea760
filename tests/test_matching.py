"""Pairing the cells of two runs: the same source first (repeats in order), then edited cells by
the closest source in run order, then what is left is only in one run; old recordings (no
source) by first line; regions inside their matched cell by label."""

from __future__ import annotations

import itertools

import pytest

from nbgpumon._ledger.cell_source import bound_source
from nbgpumon._ledger.matching import (
    EDITED,
    ONLY_IN_A,
    ONLY_IN_B,
    SAME_FIRST_LINE,
    SAME_LABEL,
    SAME_SOURCE,
    match_records,
)
from nbgpumon._ledger.records import CellRecord

_counts = itertools.count()


def cell(source: str, count: int | None = None, hashed: bool = True) -> CellRecord:
    """A cell record of ``source`` (an old-schema one without source or hash: ``hashed``)."""
    n = next(_counts) if count is None else count
    return CellRecord(
        index=n, kind="cell", execution_count=n, cell_id=None,
        label=source.strip().splitlines()[0], start=float(n), duration=0.5, status="ok",
        error="", devices=(), rss_before=0, rss_after=0, rss_peak=0, rss_peak_exact=True,
        source=source if hashed else "", source_hash=bound_source(source).hash if hashed else None,
    )  # fmt: skip


def region(label: str, count: int) -> CellRecord:
    return CellRecord(
        index=0, kind="region", execution_count=count, cell_id=None, label=label, start=0.0,
        duration=0.1, status="ok", error="", devices=(), rss_before=0, rss_after=0,
        rss_peak=0, rss_peak_exact=True,
    )  # fmt: skip


def sources(pairs) -> list[tuple[str | None, str | None, str]]:
    return [
        (p.a.source or p.a.label if p.a else None, p.b.source or p.b.label if p.b else None, p.how)
        for p in pairs
    ]


def test_the_same_source_pairs_and_its_repeats_pair_in_order_of_execution():
    a = [cell("x = 1"), cell("step()"), cell("step()"), cell("print(x)")]
    b = [cell("x = 1"), cell("step()"), cell("step()"), cell("step()"), cell("print(x)")]
    pairs = match_records(a, b)
    assert [(p.a, p.b, p.how) for p in pairs] == [
        (a[0], b[0], SAME_SOURCE),
        (a[1], b[1], SAME_SOURCE),
        (a[2], b[2], SAME_SOURCE),
        (None, b[3], ONLY_IN_B),  # the third step() of B, placed where it ran
        (a[3], b[4], SAME_SOURCE),
    ]


def test_an_edited_cell_pairs_with_the_closest_source_and_a_new_one_is_only_in_its_run():
    a = [cell("import numpy as np"), cell("keep = np.ones(100 * 2**20 // 8)"), cell("done()")]
    b = [
        cell("import numpy as np"),
        cell("extra = list(range(10))"),
        cell("keep = np.ones(3 * 100 * 2**20 // 8)"),
        cell("done()"),
    ]
    pairs = match_records(a, b)
    assert sources(pairs) == [
        ("import numpy as np", "import numpy as np", SAME_SOURCE),
        (None, "extra = list(range(10))", ONLY_IN_B),
        ("keep = np.ones(100 * 2**20 // 8)", "keep = np.ones(3 * 100 * 2**20 // 8)", EDITED),
        ("done()", "done()", SAME_SOURCE),
    ]
    assert 0.6 <= pairs[2].similarity < 1.0


def test_a_source_unlike_every_other_pairs_with_none():
    a = [cell("train(model, epochs=3)")]
    b = [cell("import os\nos.listdir('.')")]
    assert sources(match_records(a, b)) == [
        ("train(model, epochs=3)", None, ONLY_IN_A),
        (None, "import os\nos.listdir('.')", ONLY_IN_B),
    ]


def test_edited_cells_pair_in_run_order_between_the_unchanged_ones():
    # B edits both cells between the anchors; "load(b)" is closer to A's first edited cell
    # than to its second, but pairing it so would cross the other pair: run order wins
    a = [cell("start()"), cell("load(data_a, fast=True)"), cell("load(data_b)"), cell("end()")]
    b = [cell("start()"), cell("load(data_a, fast=False)"), cell("load(data_b, x=1)"),
         cell("end()")]  # fmt: skip
    pairs = match_records(a, b)
    assert [(p.a, p.b) for p in pairs] == list(zip(a, b, strict=True))
    assert [p.how for p in pairs] == [SAME_SOURCE, EDITED, EDITED, SAME_SOURCE]


def test_an_edited_cell_never_pairs_across_an_unchanged_one():
    # A's edited cell is before "middle()", B's look-alike after it: they are not one cell
    a = [cell("prepare(rows=10)"), cell("middle()"), cell("finish()")]
    b = [cell("middle()"), cell("prepare(rows=20)"), cell("finish()")]
    pairs = match_records(a, b)
    assert sources(pairs) == [
        ("prepare(rows=10)", None, ONLY_IN_A),
        ("middle()", "middle()", SAME_SOURCE),
        (None, "prepare(rows=20)", ONLY_IN_B),
        ("finish()", "finish()", SAME_SOURCE),
    ]


def test_a_moved_cell_still_pairs_by_its_source():
    a = [cell("one()"), cell("two()"), cell("three()")]
    b = [cell("three()"), cell("one()"), cell("two()")]
    pairs = match_records(a, b)
    assert {(p.a.source, p.b.source) for p in pairs} == {
        ("one()", "one()"), ("two()", "two()"), ("three()", "three()"),
    }  # fmt: skip
    assert all(p.how == SAME_SOURCE for p in pairs)


def test_old_recordings_without_source_pair_by_first_line():
    a = [cell("import numpy as np\nx = 1", hashed=False), cell("fit(model, lr=0.1)", hashed=False)]
    b = [cell("import numpy as np\nx = 2"), cell("fit(model, lr=0.01)"), cell("import os")]
    pairs = match_records(a, b)
    assert [(p.a, p.b, p.how) for p in pairs] == [
        (a[0], b[0], SAME_FIRST_LINE),  # same first line: B's hash is of another source
        (a[1], b[1], EDITED),
        (None, b[2], ONLY_IN_B),
    ]


def test_first_lines_need_more_in_common_than_sources():
    # "print(total)" and "print(model)" are 0.75 alike: enough for sources, not for first lines
    sourced = match_records([cell("print(total)")], [cell("print(model)")])
    assert [p.how for p in sourced] == [EDITED]
    a = [cell("print(total)", hashed=False)]
    b = [cell("print(model)", hashed=False)]
    assert [p.how for p in match_records(a, b)] == [ONLY_IN_A, ONLY_IN_B]


def test_regions_pair_by_label_inside_their_matched_cell():
    a_cell, b_cell = cell("for e in range(2): ...", 5), cell("for e in range(3): ...", 7)
    a = [region("epoch", 5), region("epoch", 5), a_cell]
    b = [region("epoch", 7), region("epoch", 7), region("epoch", 7), b_cell]
    pairs = match_records(a, b)
    assert [(p.a, p.b, p.how) for p in pairs] == [
        (a[0], b[0], SAME_LABEL),
        (a[1], b[1], SAME_LABEL),
        (None, b[2], ONLY_IN_B),
        (a_cell, b_cell, EDITED),
    ]


def test_no_cells_pair_with_nothing():
    assert match_records([], []) == []
    only = cell("x = 1")
    assert [(p.a, p.b, p.how) for p in match_records([only], [])] == [(only, None, ONLY_IN_A)]


# -- a magic pairs only with the same magic; nothing pairs on a shared beginning alone -------
@pytest.mark.parametrize(
    ("in_a", "in_b"),
    [
        ("%gpumon cells 5", "%gpumon advise"),  # 0.62: "%gpumon " and a few letters
        ("%gpumon cells -5", "%gpumon record ''"),  # 0.61
        ("%gpumon advise", "%gpumon trace on"),  # 0.67
        ("%time x = f(3)", "%timeit x = f(3)"),  # alike, but another magic
        ("%time train()", "train()"),  # a magic and plain code
        ("import os", "import torch"),  # 0.67: "import " and an "o"
        ("import numpy as np", "import pandas as pd"),
    ],
)
def test_cells_that_share_only_a_beginning_or_differ_in_magic_are_not_edited(in_a, in_b):
    a = [cell("start()"), cell(in_a), cell("end()")]
    b = [cell("start()"), cell(in_b), cell("end()")]
    assert sources(match_records(a, b)) == [
        ("start()", "start()", SAME_SOURCE),
        (in_a, None, ONLY_IN_A),
        (None, in_b, ONLY_IN_B),
        ("end()", "end()", SAME_SOURCE),
    ]


@pytest.mark.parametrize(
    ("in_a", "in_b"),
    [
        ("x = f(3)", "x = f(4)"),
        ("%gpumon cells 5", "%gpumon cells 10"),  # the same magic and subcommand
        ("%gpumon cells 5", "%gpumon cells 100"),
        ("batch = 32", "batch = 64"),  # a value changed: nothing after it in common but that
        ("lr = 0.1", "lr = 0.01"),
        ("%%time\nx = f(3)", "%%time\nx = f(4)"),
        ("load(rows, fast=True)", "load(rows, fast=False)"),
        ("x = prepare()\ny = model(x)", "x = prepare()\ny = model(x)\nprint(y)"),  # a line added
    ],
)
def test_a_genuinely_edited_cell_still_pairs(in_a, in_b):
    a = [cell("start()"), cell(in_a), cell("end()")]
    b = [cell("start()"), cell(in_b), cell("end()")]
    pairs = match_records(a, b)
    assert sources(pairs)[1] == (in_a, in_b, EDITED)
    assert 0.6 <= pairs[1].similarity < 1.0


def test_of_two_magics_in_b_the_same_subcommand_pairs_with_a_s_magic():
    # B ran "%gpumon advise" and "%gpumon cells 10" where A ran "%gpumon cells 5": the advise
    # cell, though next in run order, is another command
    a = [cell("start()"), cell("%gpumon cells 5"), cell("end()")]
    b = [cell("start()"), cell("%gpumon advise"), cell("%gpumon cells 10"), cell("end()")]
    assert sources(match_records(a, b)) == [
        ("start()", "start()", SAME_SOURCE),
        (None, "%gpumon advise", ONLY_IN_B),
        ("%gpumon cells 5", "%gpumon cells 10", EDITED),
        ("end()", "end()", SAME_SOURCE),
    ]
