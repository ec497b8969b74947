"""What a name shown to people may hold: monitor, channel and account names.

A name goes into alerts and terminals as it is, so it must show something and must not
steer the display: at least one visible character, and no control characters (BEL, ESC,
newlines, ...), line or paragraph separators, or bidi embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069), which reorder the text around them (CVE-2021-42574).
Format characters that only join or mark text (ZWJ in emoji sequences, LRM) are allowed,
but do not count as visible.
"""

from __future__ import annotations

import unicodedata

# Bidi embeddings and overrides (LRE, RLE, PDF, LRO, RLO) and isolates (LRI, RLI, FSI, PDI).
BIDI_CONTROLS = frozenset(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
LINE_BREAKS = frozenset("\u2028\u2029")
# Letters and symbols that draw nothing (fillers, the blank braille pattern, Khmer inherent
# vowels): often used to make a name that looks empty.
BLANK_GRAPHICS = frozenset("\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
_VISIBLE_CATEGORIES = ("L", "N", "P", "S")  # letters, numbers, punctuation, symbols
RULE = "at least one visible character; no control or bidi-override characters"


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name (a message naming the character), or None if it can."""
    for char in value:
        if unicodedata.category(char) == "Cc" or char in LINE_BREAKS:
            return f"may not contain control characters (found U+{ord(char):04X})"
        if char in BIDI_CONTROLS:
            return f"may not contain bidi-override characters (found U+{ord(char):04X})"
    if not any(_visible(char) for char in value):
        return "must contain at least one visible character"
    return None


def _visible(char: str) -> bool:
    return unicodedata.category(char).startswith(_VISIBLE_CATEGORIES) and char not in BLANK_GRAPHICS
