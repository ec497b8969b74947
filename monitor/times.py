"""Times as the API, events and stored details write them: RFC 3339 in UTC with a ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(value: datetime) -> str:
    """``2026-11-30T23:52:14.123456Z``; an aware ``value`` in any zone is given in UTC."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def rfc3339_or_none(value: datetime | None) -> str | None:
    """``rfc3339(value)``, and None for None (a time not set: a key not revoked)."""
    return None if value is None else rfc3339(value)
