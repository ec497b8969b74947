"""A monitor's version, for a change made only if nobody changed it since it was read: its
strong ETag (id and ``updated_at`` to the microsecond), and whether an ``If-Match`` lets a
change go ahead (RFC 9110). Pure: the faces pass the header's fields as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# One entity-tag of an If-Match list (RFC 9110 8.8.3), after any empty list elements: W/ if
# weak, the quoted opaque tag (etagc: visible ASCII but DQUOTE, and obs-text), a comma or the end.
_ENTITY_TAG = re.compile(r'[ \t,]*(W/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,|$)')


def etag(row: Mapping[str, Any]) -> str:
    return f'"{row["id"]}-{int(row["updated_at"].timestamp() * 1_000_000)}"'


def if_match(values: Sequence[str], current: str) -> bool:
    """Whether the ``If-Match`` header fields ``values`` let a change of the representation whose
    strong ETag is ``current`` go ahead (RFC 9110 13.1.1): ``*``, or a list of entity-tags of
    which one is ``current`` by the strong comparison (a weak tag never matches). An empty or
    malformed field matches nothing."""
    text = ", ".join(values).strip()
    if text == "*":
        return True
    tags: list[str] = []
    position = 0
    while text[position:].strip(" \t,"):
        match = _ENTITY_TAG.match(text, position)
        if match is None:
            return False
        if match.group(1) is None:
            tags.append(match.group(2))
        position = match.end()
    return current in tags
