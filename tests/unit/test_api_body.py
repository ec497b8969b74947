"""Which declared media types the API takes as a JSON body (others are 415)."""

from __future__ import annotations

import pytest

from monitor.api.app import is_json

CASES = [
    ("application/json", True),
    ("application/merge-patch+json", True),
    ("application/problem+json", True),
    ("text/plain", False),
    ("application/octet-stream", False),  # what aiohttp reports when there is no Content-Type
    ("application/x-www-form-urlencoded", False),  # curl -d without -H
    ("text/json", False),
    ("application/jsonp", False),
    ("multipart/form-data", False),
    ("", False),
]


@pytest.mark.parametrize(("content_type", "taken"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_is_json(content_type: str, taken: bool) -> None:
    assert is_json(content_type) is taken
