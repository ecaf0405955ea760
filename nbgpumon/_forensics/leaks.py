"""The per-cell leak verdict: when a cell keeps more than a threshold, name who holds it.

Before each cell only the identities of the user's variables are noted (ids, never the objects,
at a cost that does not grow with the cells run: ``namespace_ids``); after a cell that kept at
least ``threshold`` bytes, a holder scan runs and the holders the cell made are named: variables
it bound or rebound, output-cache entries it added, the traceback of its own error, and holders
that grew since the last scan.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._ledger.records import CellRecord, Retention
from . import holder_scan
from .namespace_ids import NamespaceIds

MOST_NAMED = 3  # holders named per cell


class _Noted(NamedTuple):
    """The namespace at one instant, as a cell's start compares its end with it."""

    ids: dict[str, int]  # user name -> id of its value (namespace_ids)
    newest_output: Any  # Out's newest key (None: empty)


class LeakWatch:
    """Notes the namespace before each cell; after it, names the holders of what it kept."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._before: dict[str, int] = {}
        self._ids = NamespaceIds()
        self._newest_output: Any = None  # Out's newest key at the cell's start (None: empty)
        self._last_sizes: dict[str, int] = {}  # holder -> bytes at the last scan
        self.scan_of_cell: holder_scan.HolderScan | None = None  # the verdict's, this cell
        # the namespace as the last cell left it: the next cell's start where nothing ran
        # between them (other_code_ran says when something did)
        self._at_end: _Noted | None = None

    def cell_started(self) -> None:
        ns = getattr(self.shell, "user_ns", None) or {}
        at_end, self._at_end = self._at_end, None
        noted = at_end if at_end is not None and self._ids.unchanged(ns) else self._noted(ns)
        self._before, self._newest_output = noted
        self.scan_of_cell = None

    def cell_ended(self) -> None:
        """Note the namespace as the cell left it, for the next cell's start (after the cell's
        reply: its start then costs nothing), unless :meth:`changes` did already."""
        if self._at_end is None:
            self._at_end = self._noted(getattr(self.shell, "user_ns", None) or {})

    def other_code_ran(self) -> None:
        """Code that is no cell ran (a front end's own): the next cell's start notes afresh."""
        self._at_end = None

    def changes(self) -> tuple[set[str], set[int]]:
        """Since the cell's start: the user's names it bound, bound again or deleted, and the
        ``Out`` entries it added (at a cost that does not grow with the cells run)."""
        ns = getattr(self.shell, "user_ns", None) or {}
        self._at_end = noted = self._noted(ns)
        after, before, out = noted.ids, self._before, ns.get("Out")
        # (set operations on the dicts' views, in C: bound, bound again, then deleted)
        names = {n for n, _ in after.items() - before.items()} | (before.keys() - after.keys())
        outputs: set[int] = set()
        if isinstance(out, dict):
            for n in reversed(out):  # (the new ones are the newest keys)
                if not self._new_output(n):
                    break
                outputs.add(n)
        return names, outputs

    def _noted(self, ns: dict[str, Any]) -> _Noted:
        return _Noted(self._ids.note(ns), _newest_key(ns.get("Out")))

    def _new_output(self, number: Any) -> bool:
        """Whether ``Out[number]`` came after the cell's start."""
        newest = self._newest_output
        if newest is None:
            return number is not None
        return isinstance(number, int) and isinstance(newest, int) and number > newest

    def verdict(self, record: CellRecord, threshold: int, budget: float = 0.05) -> Retention | None:
        """Who holds what ``record`` kept, or None when it kept less than ``threshold``."""
        if threshold <= 0:
            return None
        kept = record.retained
        if kept is not None and kept >= threshold:
            device, amount = "cuda", kept
        elif record.rss_delta is not None and record.rss_delta >= threshold:
            device, amount = "host", record.rss_delta
        else:
            return None
        found = holder_scan.scan(self.shell, device, budget, keys=True)  # (for cell_kinds)
        self.scan_of_cell = found
        smallest = max(2**20, amount // 64)  # below this a holder does not explain the amount
        named = [nb for nb in self._new_holders(found, record.status != "ok") if nb[1] >= smallest]
        self._last_sizes = {h.name: h.bytes for h in found.holders}
        if not named:
            # Nothing new by name (e.g. appended to an existing list): the biggest holders are
            # the best lead there is.
            named = [(h.name, h.bytes) for h in found.holders if h.bytes >= amount // 4]
        if not named and device == "host":
            return None  # resident memory also grows by imports and caches: no news then
        named.sort(key=lambda nb: -nb[1])
        return Retention(device, tuple(named[:MOST_NAMED]), found.partial)

    def _new_holders(self, found: holder_scan.HolderScan, failed: bool) -> list[tuple[str, int]]:
        ns = getattr(self.shell, "user_ns", None) or {}
        named: list[tuple[str, int]] = []
        for h in found.holders:
            root = holder_scan.root_of(h.name)
            if root.startswith("Out["):
                new = self._new_output(_output_number(root))
            elif root.startswith("traceback frame"):
                new = failed  # a stale traceback from an earlier cell is not this cell's
            elif root in ns and not h.hidden:
                new = self._before.get(root) != id(ns[root])
            else:
                new = False
            if new:
                named.append((h.name, h.bytes))
            elif h.name in self._last_sizes and h.bytes > self._last_sizes[h.name]:
                named.append((h.name, h.bytes - self._last_sizes[h.name]))  # it grew
        return named


def _newest_key(out: Any) -> Any:
    """``Out``'s newest key, not all of them: IPython numbers outputs by cell, and a set of its
    keys would cost a notebook of many outputs more at every cell."""
    return next(reversed(out), None) if isinstance(out, dict) else None


def _output_number(name: str) -> int | None:
    try:
        return int(name[4:-1])
    except ValueError:
        return None
