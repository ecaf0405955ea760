"""Numbers as people read them: bytes, durations, percentages, counts, times of day.

The Python twin of ``js/src/format.js``: the text views and the browser say "1.0 GiB",
"12.3 s" and "−1.0 MiB" the same way. These are words for people, so only the views (and the
``_api``/``_ipython`` wiring) import this module (the "Only views make words" contract in
``pyproject.toml``): a negative figure takes U+2212 (a real minus, as wide as "+"), as the
chart does; what machines read (the frames, CSV and Parquet, the exporter) carries numbers,
never these strings.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

from .units import byte_unit

MINUS = "\u2212"  # format.js's MINUS


def format_bytes(n: float | None, signed: bool = False) -> str:
    """Bytes as people read them, ``1073741824 -> "1.0 GiB"``; ``signed`` adds ``+`` to positive
    values."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "—"
    name, size = byte_unit(n)
    value = abs(n) / size
    digits = 0 if size == 1 or value >= 100 else 1
    return f"{sign_of(n, signed)}{value:.{digits}f} {name}"


def sign_of(n: float, signed: bool = False) -> str:
    """The sign a figure is written with: ``MINUS`` for a negative one, ``+`` for a positive
    one when ``signed`` (a change), else nothing."""
    return MINUS if n < 0 else ("+" if signed and n > 0 else "")


def format_seconds(s: float | None) -> str:
    """A duration as people read it: ``0.25 -> "250 ms"``, ``12.34 -> "12.3 s"``,
    ``125 -> "2 min 5 s"``."""
    if s is None:
        return "—"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    minutes, seconds = divmod(round(s), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def format_percent(p: float | None, signed: bool = False) -> str:
    """A percentage as people read it, ``87.4 -> "87%"``; ``signed`` (a change): ``"+25%"``,
    ``"−40%"``."""
    if p is None or math.isnan(p):
        return "—"
    whole = round(p)  # the sign of what is shown: -0.3 is "0%", not "−0%"
    return f"{sign_of(whole, signed)}{abs(whole)}%"


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` things in words: ``"1 sample"``, ``"1,200 samples"``, ``"0 holders"``;
    ``plural`` where adding an s is wrong (``counted(2, "process", "processes")``)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def format_utc(t: float, fmt: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    """Unix time ``t`` in UTC: what a recording's report and damage notes show."""
    return datetime.fromtimestamp(t, timezone.utc).strftime(fmt)


def format_local(t: float, fmt: str = "%H:%M:%S") -> str:
    """Unix time ``t`` on this machine's clock: what a live view shows."""
    return time.strftime(fmt, time.localtime(t))


def format_value(value: float | None, unit: str) -> str:
    """A sample in its registry unit: "3.0 GiB", "87%", "412 W", "61 °C", "1980 MHz",
    "1.2 GiB/s"; "—" when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if unit == "bytes":
        return format_bytes(value)
    if unit == "bytes/s":
        return f"{format_bytes(value)}/s"
    if unit == "percent":
        return format_percent(value)
    known = {"watts": " W", "celsius": " °C", "MHz": " MHz"}
    if unit in known:
        return f"{value:.0f}{known[unit]}"
    return f"{value:.3g} {unit}".rstrip()  # a unit the registry added later: 3 digits
