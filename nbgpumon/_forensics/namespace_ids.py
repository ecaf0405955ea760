"""The identities of the user's variables at a cell's start, noted at a cost that does not grow
with the number of cells run.

IPython adds names of its own to the namespace with every cell (``_i1``, ``_i2``, …, and ``_N``
for outputs), so a walk over the whole namespace costs more at cell 10,000 than at cell 10.
Instead, the names added since the last note are read from the end of the namespace (a dict
keeps insertion order, and a name bound again keeps its place), and only the user's own names
have their identities taken. Where the namespace changed in a way that shortcut cannot follow
(the last name noted deleted, IPython's own names culled, ``%reset``), one full walk notes it
afresh.
"""

from __future__ import annotations

import re
from typing import Any

# IPython's history names: _i, _ii, _iii, _iN (inputs), _, __, ___, _N (outputs)
_HISTORY_NAME = re.compile(r"_i{0,3}\d*|_{1,3}")


class NamespaceIds:
    """The identities of the user's variables, noted by ``note(ns)`` -> {name: id(value)} (IPython's
    history names left out: they are its hidden references, looked at apart)."""

    def __init__(self) -> None:
        self._names: dict[str, None] = {}  # the user's names, in the namespace's order
        self._size = 0  # len(ns) at the last note
        self._last: Any = None  # the namespace's newest name at the last note
        self.full_walks = 0  # notes that had to walk the whole namespace (for tests)

    def note(self, ns: dict[str, Any]) -> dict[str, int]:
        if not isinstance(ns, dict):  # (a mapping of another kind keeps no insertion order)
            self._last = None
            ns = dict(ns)
        if not self._caught_up(ns):
            self.full_walks += 1
            self._names = dict.fromkeys(n for n in ns if not _history(n))
        self._size = len(ns)
        self._last = next(reversed(ns), None)
        names = self._names
        return dict(zip(names, map(id, map(ns.__getitem__, names)), strict=True))  # (in C)

    def unchanged(self, ns: Any) -> bool:
        """Whether ``ns`` has the names it had at the last note, by their number and the newest
        of them (in one step: a name bound again to another value is not seen)."""
        return (
            isinstance(ns, dict)
            and self._last is not None
            and len(ns) == self._size
            and next(reversed(ns), None) == self._last
        )

    def _caught_up(self, ns: dict[str, Any]) -> bool:
        """Bring the user's names up to date from the names added since the last note; False
        where that cannot account for every name in ``ns``."""
        if self._last is None:
            return False
        added: list[str] = []
        for name in reversed(ns):
            if name == self._last:
                break
            added.append(name)
        else:
            return False  # the newest name noted is gone
        if len(ns) != self._size + len(added):  # (equal: no name went, the usual cell)
            gone = [name for name in self._names if name not in ns]
            again = sum(1 for name in added if name in self._names)  # deleted, bound again
            if len(ns) != self._size + len(added) - len(gone) - again:
                return False  # some other name went (IPython culled its outputs, %reset)
            for name in gone:
                del self._names[name]
        for name in reversed(added):
            if not _history(name):
                self._names[name] = None
        return True


def _history(name: str) -> bool:
    return _HISTORY_NAME.fullmatch(name) is not None
