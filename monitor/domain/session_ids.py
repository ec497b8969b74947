"""A dashboard session's id, what is stored of it, and when it ends: pure.

The id is 32 bytes of ``secrets.token_bytes`` (256 bits), sent once in the cookie as URL-safe
base64 and stored only as its SHA-256: a random value of that size needs no slow hash, and a
copy of the sessions table opens no session (its CSRF token: ``csrf.py``).

A session ends at whichever comes first: ``idle`` seconds after it was last seen, or
``absolute`` seconds after it was made (``MONITOR_SESSION_IDLE_SECONDS``,
``MONITOR_SESSION_ABSOLUTE_SECONDS``). "Last seen" is written at most once per
``touch_interval(idle)``, a minute or a tenth of the idle time when that is shorter, so a
dashboard's polling costs one UPDATE a minute rather than one per request, and the idle expiry
is late by at most that much.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

# "__Host-": the browser keeps it only if Secure, with Path=/ and no Domain (RFC 6265bis 4.1.3.2).
COOKIE = "__Host-monitor_session"
ID_BYTES = 32
TOUCH_AT_MOST = 60.0  # seconds between two writes of last_seen


def new_id() -> str:
    """A new session id, as the cookie carries it (43 URL-safe characters)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(ID_BYTES)).rstrip(b"=").decode()


def parse_id(text: str) -> bytes | None:
    """The id's bytes, or None when ``text`` cannot be one of ours (wrong length or alphabet)."""
    if len(text) != 43:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == ID_BYTES else None


def hash_id(text: str) -> bytes | None:
    """What the sessions table stores of an id (SHA-256 of its bytes); None for a malformed one."""
    raw = parse_id(text)
    return None if raw is None else hashlib.sha256(raw).digest()


@dataclass(frozen=True)
class Lifetime:
    idle: float  # seconds without a request
    absolute: float  # seconds since sign-in

    def expires_at(self, created: datetime, last_seen: datetime) -> datetime:
        """When a session made at ``created`` and last seen at ``last_seen`` ends."""
        return min(last_seen + timedelta(seconds=self.idle), created + timedelta(seconds=self.absolute))

    def alive(self, now: datetime, created: datetime, last_seen: datetime) -> bool:
        return now < self.expires_at(created, last_seen)

    def touch_interval(self) -> float:
        return min(TOUCH_AT_MOST, self.idle / 10)

    def needs_touch(self, now: datetime, last_seen: datetime) -> bool:
        """Whether this request should write ``last_seen`` (at most once per touch interval)."""
        return (now - last_seen).total_seconds() >= self.touch_interval()
