"""The code of a front-end module without its comments, line by line: what the name tests
(tests/test_framework_names.py, tests/test_device_source_names.py) read of js/src."""

from __future__ import annotations

import re
from collections.abc import Iterator

_TOKENS = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<text>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
    r"""|`(?:\\.|[^`\\])*`|[^/"'`]+|/)""",
    re.DOTALL,
)


def js_code(source: str) -> Iterator[tuple[int, str]]:
    """(line number, code on it) for each piece of ``source`` that is not a comment: strings
    and template literals included."""
    for token in _TOKENS.finditer(source):
        text = token.group("text")
        if text is None:
            continue
        first = source.count("\n", 0, token.start())
        for i, part in enumerate(text.split("\n")):
            yield first + i + 1, part
