"""A listing's pages, for every face: the cursor a page hands out reads back as it was, and
anything else is a 400 naming ``cursor``; a limit outside 1-1000 is a 400 naming ``limit``."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from monitor.domain.errors import DomainError
from monitor.domain.paging import MAX_ID, check_limit, decode_cursor, encode_cursor, next_page


def _raw(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize("value", [[1], [MAX_ID], [0], [7, 1790000000000000]])
def test_a_cursor_reads_back_as_it_was_made(value: list[int]) -> None:
    assert decode_cursor(encode_cursor(value), (int,) * len(value)) == value


REFUSED = [
    ("not base64", "!!!", (int,)),
    ("not JSON", _raw("x")[:-2] + "!!", (int,)),
    ("not a list", _raw({"id": 1}), (int,)),
    ("too short", _raw([]), (int,)),
    ("too long", _raw([1, 2]), (int,)),
    ("a string for an id", _raw(["1"]), (int,)),
    ("a bool for an id", _raw([True]), (int,)),
    ("negative", _raw([-1]), (int,)),
    ("beyond 64 bits", _raw([MAX_ID + 1]), (int,)),
]


@pytest.mark.parametrize(("raw", "shape"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_cursor_not_issued_here_is_refused_naming_the_parameter(raw: str, shape: tuple[type, ...]) -> None:
    with pytest.raises(DomainError) as caught:
        decode_cursor(raw, shape)
    assert (caught.value.status, caught.value.code, caught.value.field) == (400, "invalid", "cursor")


@pytest.mark.parametrize("raw", [None, ""])
def test_no_cursor_is_the_first_page(raw: str | None) -> None:
    assert decode_cursor(raw, (int,)) is None


@pytest.mark.parametrize(("rows", "limit", "page", "more"), [
    (3, 3, 3, False),
    (4, 3, 3, True),
    (0, 3, 0, False),
    (2, 1, 1, True),
])  # fmt: skip
def test_next_page(rows: int, limit: int, page: int, more: bool) -> None:
    found = [{"id": i + 1} for i in range(rows)]
    shown, cursor = next_page(found, limit)
    assert len(shown) == page
    assert (cursor is not None) is more
    if cursor is not None:
        assert decode_cursor(cursor, (int,)) == [page]


@pytest.mark.parametrize(("limit", "ok"), [(0, False), (1, True), (1000, True), (1001, False)])
def test_limit(limit: int, ok: bool) -> None:
    if ok:
        check_limit(limit)
        return
    with pytest.raises(DomainError) as caught:
        check_limit(limit)
    assert caught.value.field == "limit" and "between 1 and 1000" in caught.value.message
