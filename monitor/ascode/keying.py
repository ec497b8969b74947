"""Keys: the stable names a document gives its objects (docs/config-as-code.md), and keys made
from names where a source has none (``monitor export`` of objects made by hand, importers)."""

from __future__ import annotations

import re
import unicodedata

KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
KEY_RULE = re.compile(KEY_PATTERN)


def keyed(name: str, taken: set[str]) -> str:
    """A key for an object called ``name``: lower case, accents dropped (``Café`` is ``cafe``),
    runs of other characters as one ``-``, at most 100 characters, ``-2``, ``-3``... where it is
    taken (``taken`` is updated)."""
    letters = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    base = re.sub(r"[^a-z0-9_.]+", "-", letters.lower()).strip("-._")[:90] or "item"
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    taken.add(key)
    return key
