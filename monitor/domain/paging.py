"""One page of a listing, the same for every face: at most ``limit`` items after ``cursor``.

A cursor is opaque to the client: the last id of the page before, as base64url of a JSON array,
so a listing stays stable while rows are added (no offset to skip or repeat one). The faces
parse ``limit`` as they read their input (the API: ``?limit=``); the cursor is the domain's.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import asyncpg

from monitor.domain.errors import DomainError

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_ID = 2**63 - 1


def encode_cursor(value: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(raw: str | None, shape: tuple[type, ...]) -> list[Any] | None:
    """The values of a cursor this domain issued, of the types ``shape`` names; None for no
    cursor (the first page); a 400 naming ``cursor`` for anything else."""
    if not raw:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        value = None
    if (
        not isinstance(value, list)
        or len(value) != len(shape)
        or not all(isinstance(v, t) and not isinstance(v, bool) for v, t in zip(value, shape, strict=True))
        # Our cursors hold ids and times as non-negative 64-bit integers.
        or any(isinstance(v, int) and not 0 <= v <= MAX_ID for v in value)
    ):
        raise DomainError(400, "invalid", "cursor: not a cursor this endpoint issued", "cursor")
    return value


def check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise DomainError(400, "invalid", f"limit: must be an integer between 1 and {MAX_LIMIT}", "limit")


def next_page(rows: Sequence[Any], limit: int, key: str = "id") -> tuple[Sequence[Any], str | None]:
    """Rows fetched with ``LIMIT limit + 1``: the page, and the cursor of the next one (None
    when this page is the last). The cursor carries the page's last ``key``."""
    if len(rows) <= limit:
        return rows, None
    return rows[:limit], encode_cursor([rows[limit - 1][key]])


async def account_page(
    conn: asyncpg.Connection | asyncpg.Pool, select: str, account: int, limit: int, cursor: str | None
) -> tuple[Sequence[asyncpg.Record], str | None]:
    """One page of the rows ``select`` (a ``SELECT ... FROM <table> t``) reads of ``account``, by
    id: the rows, and the cursor of the next page (None on the last)."""
    check_limit(limit)
    after = decode_cursor(cursor, (int,))
    rows = await conn.fetch(
        f"{select} WHERE t.account_id = $1 AND t.id > $2 ORDER BY t.id LIMIT $3",
        account,
        after[0] if after else 0,
        limit + 1,
    )
    return next_page(rows, limit)


async def account_listing(
    conn: asyncpg.Connection | asyncpg.Pool,
    select: str,
    account: int,
    limit: int,
    cursor: str | None,
    render: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """A listing's answer, ``{"items", "next_cursor"}``: one page of ``account_page``'s rows,
    each as ``render`` shows it."""
    page, next_cursor = await account_page(conn, select, account, limit, cursor)
    return {"items": [render(row) for row in page], "next_cursor": next_cursor}
