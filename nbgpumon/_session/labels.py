"""The bound on a mark's or region's label, said the same way by the API and the magic."""

from __future__ import annotations

from .._foundation.errors import UsageError
from .._ledger.ledger import MAX_LABEL


def check_label_length(what: str, label: str) -> None:
    """Refuse a ``what`` ("mark", "track") label longer than MAX_LABEL characters."""
    if len(label) > MAX_LABEL:
        raise UsageError(
            f"a {what} label is at most {MAX_LABEL:,} characters, not {len(label):,}; shorten it"
        )
