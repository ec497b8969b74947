"""Parsing of a request: query parameters, path ids, JSON bodies, the public base URL. What they
mean is the domain's (its operations judge the values, a cursor included)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from monitor.api.context import SETTINGS
from monitor.api.errors import ApiError
from monitor.domain import paging
from monitor.domain.paging import MAX_ID

# Times a query may name: no check predates 1970, and a margin below datetime's year 9999
# keeps the arithmetic on them (windows, hour rounding) from overflowing.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def _digits(raw: str) -> bool:
    # str.isdigit() is also true of "²" and other digits int() refuses.
    return raw.isascii() and raw.isdigit()


def public_base(request: web.Request) -> str:
    """The origin (and path prefix) users reach the api at: MONITOR_PUBLIC_URL, else the
    address of this request."""
    configured = request.app[SETTINGS].public_url
    return configured.rstrip("/") if configured else str(request.url.origin())


def path_id(request: web.Request, name: str = "id", what: str = "monitor") -> int:
    raw = request.match_info[name]
    # An id that cannot exist is the same as one that does not: 404, not 400.
    if not _digits(raw) or not (0 < int(raw) <= MAX_ID):
        raise ApiError(404, "not_found", f"{what} not found")
    return int(raw)


def body_target_id(request: web.Request, name: str = "id") -> int:
    """The path's id for an operation that judges its body before it looks the object up (a
    PATCH): 0, which no object has, for an id that cannot exist, so the operation answers a bad
    body first and then 404, as it does for an id that does not exist."""
    raw = request.match_info[name]
    return int(raw) if _digits(raw) and 0 < int(raw) <= MAX_ID else 0


async def json_object(request: web.Request, *, limit: int | None = None) -> dict[str, Any]:
    """The body as a JSON object (400 when it is not one). ``limit``: a route's own cap, above
    the app's (``app.LARGE_BODIES``), its body read here a chunk at a time (413 past it)."""
    try:
        if limit is None:
            body = await request.json()
        else:
            body = json.loads((await _bounded(request, limit)).decode(request.charset or "utf-8"))
    except (ValueError, RecursionError, LookupError):
        # ValueError: bad JSON or UTF-8, or an integer of more than 4300 digits; RecursionError:
        # nesting too deep; LookupError: a charset Python does not know.
        raise ApiError(400, "invalid_json", "request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "request body must be a JSON object")
    return body


async def _bounded(request: web.Request, limit: int) -> bytes:
    chunks, size = [], 0
    while chunk := await request.content.read(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "too_large", f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    if not _digits(raw) or not (low <= int(raw) <= high):
        raise ApiError(400, "invalid", f"{name}: must be an integer between {low} and {high}", name)
    return int(raw)


def time_param(request: web.Request, name: str) -> datetime | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "+"))
    except ValueError:
        raise ApiError(400, "invalid", f"{name}: must be an RFC 3339 time", name) from None
    if value.tzinfo is None:
        raise ApiError(400, "invalid", f"{name}: must carry a time zone (e.g. Z)", name)
    try:
        utc: datetime | None = value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00, before the first instant datetime has
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise ApiError(400, "invalid", f"{name}: must be between 1970-01-01 and 9999-01-01", name)
    return utc


def time_range(request: web.Request) -> tuple[datetime | None, datetime | None]:
    start, end = time_param(request, "from"), time_param(request, "to")
    if start is not None and end is not None and start >= end:
        raise ApiError(400, "invalid", "from: must be before to", "from")
    return start, end


def limit_param(request: web.Request) -> int:
    """``?limit=``: how many items a page of a listing holds."""
    return int_param(request, "limit", paging.DEFAULT_LIMIT, 1, paging.MAX_LIMIT)
