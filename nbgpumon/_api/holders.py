"""``nbgpumon.holders()`` answers with the scan (data, from forensics), which prints as its
words."""

from __future__ import annotations

from dataclasses import fields

from .._forensics.holder_scan import HolderScan
from .._views.memory.holders import holders_text
from .._views.reprs.short import short_text
from .._views.words.text_view import pre_html

_REST = "print(nbgpumon.holders()) shows them all"


class HolderReport(HolderScan):
    """A :class:`HolderScan` whose repr is what holds memory, as lines (at most
    ``REPR_LIMIT`` characters however many processes share the GPU; ``print`` gives all)."""

    __slots__ = ()

    @classmethod
    def of(cls, scan: HolderScan) -> HolderReport:
        if isinstance(scan, cls):
            return scan
        return cls(**{f.name: getattr(scan, f.name) for f in fields(scan)})

    def text(self) -> str:
        """What holds memory, biggest first, then the processes on the GPU, as lines."""
        return holders_text(self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return short_text(self.text().splitlines(), _REST)

    def _repr_html_(self) -> str:
        return pre_html(repr(self))
