"""A function that passes its arguments on, shown with the parameters of what takes them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_LEADING = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def forwards_to(declared: Callable[..., Any]) -> Callable[[F], F]:
    """Show ``declared``'s parameters as those of the decorated ``f(*args, **kwargs)``.

    The parameters are declared once (in ``declared``: a dataclass or a function) and a
    function that hands ``*args, **kwargs`` on to it still shows them to ``help()``,
    ``inspect.signature`` and IPython's ``?`` and completions. The decorated function keeps
    its own name, docstring and return annotation, and its parameters before ``*args`` (a
    method's ``self``) stay first, in place of ``declared``'s of the same name (a method that
    forwards to another class's method). Nothing is wrapped: a call costs what it did.
    """
    taken = list(inspect.signature(declared).parameters.values())

    def show(forward: F) -> F:
        own = inspect.signature(forward)
        leading = [p for p in own.parameters.values() if p.kind in _LEADING]
        named = {p.name for p in leading}
        shown = [*leading, *(p for p in taken if p.name not in named)]
        forward.__signature__ = own.replace(parameters=shown)  # type: ignore[attr-defined]
        return forward

    return show
