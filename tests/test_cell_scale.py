"""The same cost per cell at cell 10,000 as at cell 10 (DESIGN.md, invariant 12), shown by what
each cell's work touches, not by timing it (the figures are bench/cell_scale.py's): the note of
the namespace before a cell reads only the names added since the last one, and the chart asks
the ledger only for its new records."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nbgpumon._forensics.namespace_ids import NamespaceIds
from nbgpumon._ledger.records import records_after

from notebook_runner import run_cells


class CountingDict(dict):
    """A namespace that counts the names a reader walks from its newest end."""

    walked = 0

    def __reversed__(self):
        for name in super().__reversed__():
            self.walked += 1
            yield name


def _run_cells_like_ipython(ns: dict, first: int, count: int) -> None:
    for n in range(first, first + count):
        ns[f"_i{n}"] = f"x = {n}"  # IPython's own input history, one name a cell
        ns["_i"] = ns["_ii"] = ns["_iii"] = ns[f"_i{n}"]


def test_a_note_walks_only_the_names_added_since_the_last_one():
    ns = CountingDict(In=[], Out={}, x=1)
    ids = NamespaceIds()
    ids.note(ns)
    _run_cells_like_ipython(ns, 1, 10_000)
    ids.note(ns)
    ns.walked = 0
    for n in range(10_001, 10_011):
        _run_cells_like_ipython(ns, n, 1)
        noted = ids.note(ns)
    # each note: the new name, the newest one noted before it, and the newest one now
    assert ns.walked <= 10 * 3
    assert ids.full_walks == 1  # the first note only
    assert set(noted) == {"In", "Out", "x"}  # IPython's history names are not the user's


def test_a_note_sees_every_binding_and_rebinding():
    ns = {"a": object(), "b": object(), "z": object()}
    ids = NamespaceIds()
    before = ids.note(ns)
    ns["a"] = object()  # rebound in place: its position in the dict stays
    ns["c"] = object()  # new
    del ns["b"]
    after = ids.note(ns)
    assert set(after) == {"a", "z", "c"} and after["a"] != before["a"]
    assert ids.full_walks == 1


@pytest.mark.parametrize(
    "change",
    [
        "del ns['z']; ns['c'] = 1",  # the newest name noted is gone
        "v = ns.pop('z'); ns['c'] = 1; ns['z'] = v",  # gone, a new name, then bound again
        "del ns['_1']; ns['c'] = 1",  # IPython culled an output of its own
        "ns.clear(); ns['c'] = 1",  # %reset
    ],
)
def test_a_change_the_shortcut_cannot_follow_is_noted_by_a_full_walk(change):
    ns = {"a": 1, "_1": 2, "z": 3}
    ids = NamespaceIds()
    ids.note(ns)
    exec(change, {"ns": ns})
    noted = ids.note(ns)
    assert set(noted) == {n for n in ns if not n.startswith("_")}
    assert "c" in noted


def test_records_after_walks_from_the_newest():
    records = [SimpleNamespace(index=i) for i in range(5, 10)]  # (all it reads of a record)
    assert records_after(records, 7) == (5, records[3:])
    assert records_after(records, 9) == (5, [])
    assert records_after([], -1) == (0, [])


def test_a_cell_after_a_thousand_names_what_it_kept_and_no_note_walked_the_namespace():
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            "%gpumon",  # the chart open: it takes its new rows from the ledger each cell
            "import numpy as np, nbgpumon",
            *(f"v{n % 7} = {n}" for n in range(1000)),
            "%gpumon summary on",
            "kept_late = np.ones(2**24)",
            "%gpumon summary off",
            "print('WALKS', "
            "nbgpumon.monitor()._session.cells_pipeline._leak_watch._ids.full_walks)",
        ],
        timeout=240,
    )
    assert ": kept_late 128 MiB" in runs[-3].stdout, runs[-3].stdout
    assert runs[-1].stdout.split() == ["WALKS", "1"]
