"""An object's own attributes, read without going through its own attribute lookup."""

from __future__ import annotations

from typing import Any


def instance_dict(obj: Any) -> dict[str, Any] | None:
    """``obj.__dict__`` when it has a real one, else None (slots, a C type, a proxy).

    Read past the class's own ``__getattribute__`` and ``__getattr__``, so that a walk over a
    notebook's variables does not call into a proxy's lookup (it may be slow, raise, or touch
    a GPU).
    """
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except Exception:
        return None
    return attrs if isinstance(attrs, dict) else None
