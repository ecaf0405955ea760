"""Which cell of one run is which cell of another: the pairing that ``nbgpumon.compare`` reads.

Cells (``kind == "cell"``) pair in three steps:

1. the same source (its ``source_hash``): the k-th run of a source in A with its k-th run in
   B, so repeats pair in order of execution;
2. the cells left, between two consecutive pairs of step 1 (those that keep run order), pair
   by the closest source (``difflib``'s ratio, at least ``SIMILAR``), keeping run order: the
   best-scoring monotone alignment, so a notebook re-run with a cell edited lines up. Two
   sources are "edited" ones of one cell only when they share more than a beginning
   (``_more_than_a_prefix``: ``%gpumon advise`` and ``%gpumon cells 5`` share "%gpumon " and
   a few scattered letters, which lift difflib's ratio over 0.6), and a magic cell only with
   one of the same magic and subcommand (``_magic``);
3. what is left is only in A or only in B.

Recordings made before schema 4 keep no source: when a run has a cell without a hash, both
runs match by first line (``label``) instead, in the same three steps (an edited first line
at least ``SIMILAR_FIRST_LINE`` alike). So do two cells that each keep no source text (a
ledger past its memory budget) in step 2.

A region (``track()``) pairs with a region of the same label inside the matched cell (in
order, for a label repeated in a loop); regions outside any cell pair by label in order.
"""

from __future__ import annotations

import bisect
import collections
import difflib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .records import CellRecord

SIMILAR = 0.6  # difflib ratio from which an edited cell is still "the same cell"
# First lines are short: "print(total)" and "print(model)" share 0.75 of theirs. Without
# sources a pair needs more of its first line in common.
SIMILAR_FIRST_LINE = 0.8
_COMPARED_CHARS = 4096  # of each source: the ratio is quadratic in length; the start says enough
# Cells left between two anchors are scored pairwise: past _MANY pairs by first line only (a
# ratio of sources can take a millisecond), past _TOO_MANY not at all (they stay one run's).
_MANY = 10_000
_TOO_MANY = 200_000
_WORD = re.compile(r"[\w-]+")  # a magic's subcommand or option: cells, record, --static
_NUMBER = re.compile(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")  # 32, 0.01, 3e-4: a value edited

SAME_SOURCE = "same source"
EDITED = "edited"
SAME_FIRST_LINE = "same first line"
SAME_LABEL = "same label"  # a region in a matched cell
ONLY_IN_A = "only in A"
ONLY_IN_B = "only in B"


@dataclass(frozen=True)
class Pair:
    """One row of a comparison: a cell of A and its cell in B, or a cell of one run only."""

    a: CellRecord | None
    b: CellRecord | None
    how: str  # SAME_SOURCE, EDITED, SAME_FIRST_LINE, SAME_LABEL, ONLY_IN_A or ONLY_IN_B
    similarity: float | None = None  # difflib ratio of an edited pair (1.0 for an exact one)

    @property
    def kind(self) -> str:
        record = self.a if self.a is not None else self.b
        return record.kind if record is not None else "cell"


def match_records(
    a: Sequence[CellRecord], b: Sequence[CellRecord], similar: float = SIMILAR
) -> list[Pair]:
    """Pair the records of run ``a`` with those of run ``b`` (both in ledger order). The pairs
    come in A's order, each cell only in B just before the next pair in B's order, and each
    cell's regions just before it, as the ledger lists them."""
    cells_a = [r for r in a if r.kind == "cell"]
    cells_b = [r for r in b if r.kind == "cell"]
    by_hash = all(r.source_hash for r in (*cells_a, *cells_b))
    cell_pairs = _match_cells(cells_a, cells_b, by_hash, similar)
    return _with_regions(a, b, cell_pairs)


# -- cells ------------------------------------------------------------------------------------
def _match_cells(
    a: list[CellRecord], b: list[CellRecord], by_hash: bool, similar: float
) -> list[Pair]:
    exact = _exact(a, b, by_hash)  # (i, j) indices into a and b
    anchors = _increasing(exact)
    matched: dict[int, tuple[int, str, float | None]] = {
        i: (j, SAME_SOURCE if by_hash else SAME_FIRST_LINE, 1.0) for i, j in exact
    }
    taken_b = {j for _, j in exact}
    # between consecutive anchors, the cells not matched exactly: aligned by similarity
    bounds = [(-1, -1), *anchors, (len(a), len(b))]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        left_a = [i for i in range(i0 + 1, i1) if i not in matched]
        left_b = [j for j in range(j0 + 1, j1) if j not in taken_b]
        for i, j, ratio in _align(left_a, left_b, a, b, by_hash, similar):
            matched[i] = (j, EDITED, ratio)
            taken_b.add(j)
    pairs = [
        Pair(r, b[matched[i][0]], matched[i][1], matched[i][2])
        if i in matched
        else Pair(r, None, ONLY_IN_A)
        for i, r in enumerate(a)
    ]
    return _place_only_in_b(pairs, b, {j: i for i, (j, _, _) in matched.items()})


def _exact(a: list[CellRecord], b: list[CellRecord], by_hash: bool) -> list[tuple[int, int]]:
    """The k-th cell of A with a source (or first line) paired with its k-th run in B."""
    waiting: dict[str, collections.deque[int]] = {}
    for j, r in enumerate(b):
        waiting.setdefault(_key(r, by_hash), collections.deque()).append(j)
    pairs = []
    for i, r in enumerate(a):
        queue = waiting.get(_key(r, by_hash))
        if queue:
            pairs.append((i, queue.popleft()))
    return pairs


def _key(r: CellRecord, by_hash: bool) -> str:
    return (r.source_hash or "") if by_hash else r.label


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest chain of ``pairs`` (sorted by A) whose B indices rise too: the anchors a
    re-run keeps in order (a cell moved elsewhere still pairs, but anchors nothing)."""
    if not pairs:
        return []
    ends: list[int] = []  # ends[k]: the smallest B index ending a chain of k + 1 pairs
    tails: list[int] = []  # ... and which pair that is
    before: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(ends, j)
        before[k] = tails[at - 1] if at else -1
        if at == len(ends):
            ends.append(j)
            tails.append(k)
        else:
            ends[at], tails[at] = j, k
    chain, k = [], tails[-1]
    while k != -1:
        chain.append(pairs[k])
        k = before[k]
    return chain[::-1]


def _align(
    left_a: list[int],
    left_b: list[int],
    a: list[CellRecord],
    b: list[CellRecord],
    by_hash: bool,
    similar: float,
) -> list[tuple[int, int, float]]:
    """The monotone pairing of ``left_a`` with ``left_b`` of the highest total similarity,
    each pair at least ``similar`` (a dynamic programme over the two lists)."""
    if not left_a or not left_b or len(left_a) * len(left_b) > _TOO_MANY:
        return []
    n, m = len(left_a), len(left_b)
    sources = by_hash and n * m <= _MANY
    score = [[_similarity(a[i], b[j], sources, similar) for j in left_b] for i in left_a]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for x in range(n - 1, -1, -1):
        for y in range(m - 1, -1, -1):
            paired = score[x][y] + best[x + 1][y + 1] if score[x][y] else 0.0
            best[x][y] = max(paired, best[x + 1][y], best[x][y + 1])
    out, x, y = [], 0, 0
    while x < n and y < m:
        if score[x][y] and best[x][y] == score[x][y] + best[x + 1][y + 1]:
            out.append((left_a[x], left_b[y], score[x][y]))
            x, y = x + 1, y + 1
        elif best[x][y] == best[x + 1][y]:
            x += 1
        else:
            y += 1
    return out


def _similarity(r: CellRecord, s: CellRecord, sources: bool, similar: float) -> float:
    """difflib's ratio of the two sources (first lines without them); 0.0 below ``similar``,
    for two different magics, and for two that share only a beginning."""
    if sources and r.source and s.source:
        one, two = r.source[:_COMPARED_CHARS], s.source[:_COMPARED_CHARS]
    else:
        one, two = r.label, s.label
        similar = max(similar, SIMILAR_FIRST_LINE)
    if _magic(one) != _magic(two):
        return 0.0
    one, two = one.strip(), two.strip()
    matcher = difflib.SequenceMatcher(None, one, two, autojunk=False)
    if matcher.real_quick_ratio() < similar or matcher.quick_ratio() < similar:
        return 0.0
    ratio = matcher.ratio()
    if ratio < similar or not _more_than_a_prefix(one, two, similar):
        return 0.0
    return round(ratio, 3)


def _magic(source: str) -> tuple[str, str] | None:
    """The magic a cell runs and its subcommand (its first word, when it is a plain word):
    ("%gpumon", "cells") for ``%gpumon cells 5``, ("%time", "") for ``%time train()``,
    ("%%time", "") for a ``%%time`` cell; None for a cell whose first line is no magic. Two
    magics are one cell edited only when these are the same."""
    line = next((text for text in source.splitlines() if text.strip()), "")
    words = line.split(maxsplit=2)
    if not words or not words[0].startswith("%") or not words[0].strip("%"):
        return None
    first = words[1] if len(words) > 1 else ""
    return words[0], first if _WORD.fullmatch(first) else ""


def _more_than_a_prefix(one: str, two: str, similar: float) -> bool:
    """Whether two sources (stripped) share more than their beginning: a beginning and an
    end around the change (``x = f(3)``, ``x = f(4)``); or, after the beginning, parts alike
    by ``similar`` themselves, a number counting as any other (``batch = 32``, ``batch =
    64``); or one is the other with more at its end. ``%gpumon advise`` and ``%gpumon cells
    5`` share "%gpumon " and, after it, nothing but a few scattered letters."""
    shorter = min(len(one), len(two))
    start = next((i for i, (x, y) in enumerate(zip(one, two, strict=False)) if x != y), shorter)
    if start == 0 or start == shorter:
        return True  # nothing in common at the start, or one contains the other whole
    rest_one, rest_two = one[start:], two[start:]
    if rest_one[-1] == rest_two[-1]:
        return True  # the change lies inside: a shared end too
    rest_one, rest_two = _NUMBER.sub("0", rest_one), _NUMBER.sub("0", rest_two)
    return difflib.SequenceMatcher(None, rest_one, rest_two, autojunk=False).ratio() >= similar


def _place_only_in_b(pairs: list[Pair], b: list[CellRecord], a_of_b: dict[int, int]) -> list[Pair]:
    """Each cell only in B goes just before the row of the next B cell that has a pair (so
    after A's own cells of that stretch), or at the end."""
    before: dict[int, list[Pair]] = {}  # A index (len(pairs): the end) → B-only rows before it
    next_a = len(pairs)
    for j in range(len(b) - 1, -1, -1):
        if j in a_of_b:
            next_a = min(next_a, a_of_b[j])
        else:
            before.setdefault(next_a, []).insert(0, Pair(None, b[j], ONLY_IN_B))
    out: list[Pair] = []
    for i, pair in enumerate(pairs):
        out += before.get(i, [])
        out.append(pair)
    return out + before.get(len(pairs), [])


# -- regions ----------------------------------------------------------------------------------
def _with_regions(
    a: Sequence[CellRecord], b: Sequence[CellRecord], cell_pairs: list[Pair]
) -> list[Pair]:
    regions_a, loose_a = _regions_by_cell(a)
    regions_b, loose_b = _regions_by_cell(b)
    out = _by_label(loose_a, loose_b)  # regions outside any cell, first
    for pair in cell_pairs:
        inside_a = regions_a.get(id(pair.a), []) if pair.a is not None else []
        inside_b = regions_b.get(id(pair.b), []) if pair.b is not None else []
        out += _by_label(inside_a, inside_b)
        out.append(pair)
    return out


def _regions_by_cell(
    records: Sequence[CellRecord],
) -> tuple[dict[int, list[CellRecord]], list[CellRecord]]:
    """Each region under the cell it ran in (the next cell in the ledger with its execution
    count: a region ends before its cell does), and the regions of no cell."""
    inside: dict[int, list[CellRecord]] = {}
    loose: list[CellRecord] = []
    pending: list[CellRecord] = []
    for r in records:
        if r.kind != "cell":
            pending.append(r)
            continue
        mine = [p for p in pending if p.execution_count == r.execution_count]
        loose += [p for p in pending if p.execution_count != r.execution_count]
        pending = []
        if mine:
            inside[id(r)] = mine
    return inside, loose + pending


def _by_label(a: list[CellRecord], b: list[CellRecord]) -> list[Pair]:
    """Regions paired by label, in order (a label repeated in a loop: k-th with k-th)."""
    waiting: dict[str, list[CellRecord]] = {}
    for r in b:
        waiting.setdefault(r.label, []).append(r)
    out = []
    for r in a:
        queue = waiting.get(r.label)
        out.append(Pair(r, queue.pop(0), SAME_LABEL, 1.0) if queue else Pair(r, None, ONLY_IN_A))
    out += [Pair(None, r, ONLY_IN_B) for queue in waiting.values() for r in queue]
    return out
