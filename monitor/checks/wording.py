"""How assertion outcomes read: quoted text, sizes, durations and JSON values, all short.

An outcome's message reaches the database, the API and a Telegram alert, and part of it
comes from the target (a header, a JSON value, a matched piece of the body). Everything
quoted here is clipped to ``CLIP`` characters and has its unprintable characters escaped,
so a message stays one short printable line whatever the target sends.
"""

from __future__ import annotations

import json
import math
from typing import Any

CLIP = 60
KIB = 1024
MIB = 1024 * 1024
_ELLIPSIS = "…"
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), allow_nan=True)


def clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + _ELLIPSIS


def printable(text: str, *, quotes: bool = True) -> str:
    """``text`` with unprintable characters escaped, and quotes and backslashes unless
    ``quotes`` is false (for JSON text, whose strings have them escaped already)."""
    if text.isprintable() and (not quotes or ('"' not in text and "\\" not in text)):
        return text
    out = []
    for char in text:
        if quotes and char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return "".join(out)


def quote(text: str, limit: int = CLIP) -> str:
    """``"text"``, clipped and escaped."""
    return f'"{printable(clip(text, limit))}"'


def pattern(text: str, limit: int = CLIP) -> str:
    """A regular expression in quotes as written (its backslashes are its own), clipped."""
    return f'"{printable(clip(text, limit), quotes=False)}"'


def json_value(value: Any, limit: int = CLIP) -> str:
    """A JSON value as JSON text, at most about ``limit`` characters, escaped for one line.

    Containers are encoded lazily and the encoding stops at the limit, so a huge array
    costs no more than a small one.
    """
    if isinstance(value, str):
        return quote(value, limit)
    parts: list[str] = []
    length = 0
    try:
        for chunk in _ENCODER.iterencode(value):
            parts.append(chunk)
            length += len(chunk)
            if length > limit:
                break
    except (TypeError, ValueError, RecursionError):
        return printable(clip(repr(value), limit))
    return printable(clip("".join(parts), limit), quotes=False)


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, with its article: "a string", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def size(n: int) -> str:
    """Bytes in binary units: ``100 bytes``, ``12.3 KiB``, ``1 MiB``."""
    if n < KIB:
        return "1 byte" if n == 1 else f"{n} bytes"
    if n < MIB:
        return f"{_one_decimal(n / KIB)} KiB"
    return f"{_one_decimal(n / MIB)} MiB"


def _one_decimal(x: float) -> str:
    return f"{x:.1f}".removesuffix(".0")


def significant(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant figures, without an exponent."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    rounded = round(x, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{rounded:f}".rstrip("0").rstrip(".")


def duration(ms: float, digits: int = 2) -> str:
    """A duration to ``digits`` significant figures: ``840 ms``, ``2.4 s``."""
    shown = significant(ms, digits)
    if float(shown) < 1000:
        return f"{shown} ms"
    return f"{significant(ms / 1000, digits)} s"


def durations(first: float, second: float) -> tuple[str, str]:
    """Two durations, with as many figures as it takes to tell them apart (2 at least)."""
    for digits in range(2, 7):
        a, b = duration(first, digits), duration(second, digits)
        if a != b:
            break
    return a, b
