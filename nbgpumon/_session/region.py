"""A ``Region`` is a part of a cell measured like a cell,
``with nbgpumon.track("epoch 3"): ...``."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from .._foundation.clipping import clipped
from .._foundation.errors import UsageError
from .._ledger.ledger import Ledger, Measurement
from .._ledger.outcome import classify_exception
from .._ledger.records import CellRecord
from .controls.nvtx_ranges import NvtxRanges, range_name


class Region:
    """The context manager returned by :meth:`Monitor.track`; one use only."""

    def __init__(
        self,
        ledger: Ledger,
        label: str,
        store: Callable[[CellRecord], object],
        ranges: NvtxRanges | None = None,
    ) -> None:
        self._ledger = ledger
        self.label = label
        self._store = store  # the cell pipeline's: the ledger and the recording
        self._ranges = ranges  # NVTX ranges, when %gpumon nvtx is on
        self._range: int | None = None
        self._open: Measurement | None = None
        self.record: CellRecord | None = None  # set when the region ends

    def __enter__(self) -> Region:
        if self._open is not None or self.record is not None:
            raise UsageError(
                f"track({self.label!r}) is already used; "
                "call nbgpumon.track(...) again for a new region"
            )
        count = self._ledger.current_execution_count()
        self._open = self._ledger.begin("region", self.label, count)
        if self._ranges is not None:
            self._range = self._ranges.push(range_name(count, self.label))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened, self._open = self._open, None
        if opened is None:
            return
        if self._ranges is not None:
            self._ranges.pop_to(self._range)
            self._range = None
        status, error = classify_exception(exc)
        self.record = self._ledger.end(opened, status, error)
        self._store(self.record)

    def __repr__(self) -> str:
        ended = "ended" if self.record is not None else "not entered"
        state = "open" if self._open is not None else ended
        return f"<Region {clipped(self.label, 80)!r}: {state}>"  # its figures, once ended: .record

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise UsageError(
            f"track({self.label!r}) is a context manager, not a decorator: "
            f"with nbgpumon.track({self.label!r}): ..."
        )
