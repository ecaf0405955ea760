"""``nbgpumon.holders()``'s answer: the scan (data, from forensics) that prints as its words."""

from __future__ import annotations

from dataclasses import fields

from .._forensics.holder_scan import HolderScan
from .._views.holders_text import holders_text


class HolderReport(HolderScan):
    """A :class:`HolderScan` whose repr is what holds memory, as lines."""

    __slots__ = ()

    @classmethod
    def of(cls, scan: HolderScan) -> HolderReport:
        if isinstance(scan, cls):
            return scan
        return cls(**{f.name: getattr(scan, f.name) for f in fields(scan)})

    def text(self) -> str:
        """What holds memory, biggest first, then the processes on the GPU, as lines."""
        return holders_text(self)

    def __repr__(self) -> str:
        return self.text()
