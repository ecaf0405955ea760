"""A cell's source as the ledger keeps it: cut to a bound, hashed whole, one copy per text.

The hash is what tells two cells apart (and, later, matches a cell across runs): the first
16 hex digits of SHA-256 of the whole source as UTF-8, so the same in every process, machine
and Python version (Python's ``hash()`` is salted per process). 64 bits: among 10,000
distinct sources, two share a hash with odds under 1 in 10^11.

Memory: the ledger keeps up to ``GPUMon.history`` (10,000) records, and 10,000 sources of
64 KiB would be 640 MB. A notebook runs the same few hundred cells again and again, so the
``SourceTable`` keeps one copy of each distinct text however many records hold it, and counts
what those copies weigh; past ``SOURCE_BUDGET`` the ledger lets go of its oldest records'
sources (their hash stays), so the worst case is that budget, not the product.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

SOURCE_LIMIT = 64 * 1024  # bytes of UTF-8 kept of one cell's source
SOURCE_BUDGET = 32 * 2**20  # bytes of memory the ledger's distinct sources may take in all
HASH_DIGITS = 16
# A cell run again (a loop of the same few cells) finds its hash among the recent ones: a short
# source's SHA-256, taken anew, costs a cell ~25 µs on a small machine; the memo holds at most
# RECENT sources of at most RECENT_LENGTH characters (1 to 4 MiB).
RECENT, RECENT_LENGTH = 256, 4096


@dataclass(frozen=True, slots=True)
class BoundedSource:
    """What a record keeps of its cell's source."""

    text: str  # at most SOURCE_LIMIT bytes of UTF-8
    cut: bool  # True: the source was longer; ``text`` is its beginning
    hash: str  # of the whole source


def bound_source(source: str, limit: int = SOURCE_LIMIT) -> BoundedSource:
    """``source`` cut to ``limit`` bytes of UTF-8 at a character boundary, and its hash."""
    try:
        data, clean = source.encode("utf-8"), True
    except UnicodeEncodeError:
        # a lone surrogate (a front end's JSON may carry one): hashed as sent, kept as U+FFFD,
        # since SQLite and the JSON of a recording take only valid UTF-8
        data, clean = source.encode("utf-8", "surrogatepass"), False
    import hashlib  # at the first cell's end, not on the load's path (OpenSSL's start)

    digest = hashlib.sha256(data).hexdigest()[:HASH_DIGITS]
    if len(data) <= limit:
        return BoundedSource(source if clean else data.decode("utf-8", "replace"), False, digest)
    end = limit
    while end > 0 and (data[end] & 0xC0) == 0x80:  # inside a character: cut before it
        end -= 1
    return BoundedSource(data[:end].decode("utf-8", "replace"), True, digest)


def bound_cell_source(source: str) -> BoundedSource:
    """:func:`bound_source` of a cell's source, a recent short one's from memory."""
    return _bound_recent(source) if len(source) <= RECENT_LENGTH else bound_source(source)


_bound_recent = functools.lru_cache(maxsize=RECENT)(bound_source)


class SourceTable:
    """The ledger's sources: one copy of each distinct text, with how many records hold it and
    what all the copies weigh (``size``, bytes of memory)."""

    def __init__(self, budget: int = SOURCE_BUDGET) -> None:
        self.budget = budget
        self.size = 0
        self._held: dict[str, list] = {}  # text -> [the one copy, records holding it]

    def __len__(self) -> int:
        return len(self._held)

    @property
    def over_budget(self) -> bool:
        return self.size > self.budget

    def hold(self, text: str) -> str:
        """The table's copy of ``text`` (``text`` itself the first time), held once more."""
        if not text:
            return text
        entry = self._held.get(text)
        if entry is None:
            entry = self._held[text] = [text, 0]
            self.size += sys.getsizeof(text)
        entry[1] += 1
        return entry[0]

    def release(self, text: str) -> None:
        """One record fewer holds ``text``; the copy goes with the last one."""
        entry = self._held.get(text)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._held[text]
            self.size -= sys.getsizeof(entry[0])
