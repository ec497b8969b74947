"""Request parameters: If-Match as RFC 9110 has it."""

from __future__ import annotations

import pytest

from monitor.domain.versions import if_match

CURRENT = '"7-1790000000000000"'

# (case, If-Match field values, whether the change goes ahead)
IF_MATCH = [
    ("the current tag", [CURRENT], True),
    ("any", ["*"], True),
    ("any, with spaces", [" * "], True),
    ("a list holding it", [f'"6-1", {CURRENT}'], True),
    ("a list holding it, no spaces", [f'"6-1",{CURRENT},"8-1"'], True),
    ("a list with empty elements", [f' , "6-1",, {CURRENT} ,'], True),
    ("two header fields", ['"6-1"', CURRENT], True),
    ("a tag with a comma in it", ['"a,b"', CURRENT], True),
    ("another tag", ['"6-1"'], False),
    ("a list without it", ['"6-1", "8-1"'], False),
    ("the current tag, weak", [f"W/{CURRENT}"], False),
    ("a list with it only weak", [f'"6-1", W/{CURRENT}'], False),
    ("the tag unquoted", [CURRENT.strip('"')], False),
    ("a list with a malformed element", [f"{CURRENT}, nonsense"], False),
    ("a tag with a quote in it", [f'"7-"1", {CURRENT}'], False),
    ("star in a list", [f"*, {CURRENT}"], False),
    ("empty", [""], False),
]


@pytest.mark.parametrize(("values", "matches"), [c[1:] for c in IF_MATCH], ids=[c[0] for c in IF_MATCH])
def test_if_match(values: list[str], matches: bool) -> None:
    assert if_match(values, CURRENT) is matches
