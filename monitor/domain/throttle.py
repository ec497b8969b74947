"""Failed sign-ins, limited per account and per client address with growing delays.

The rule (pure, :class:`Policy`): after ``free`` failures in a row, each further attempt waits
``base`` seconds after the last failure, twice that after the next failure, and so on up to
``maximum`` (defaults: 5 free per e-mail, 20 per address, then 1 s, 2 s, 4 s ... 15 min). An
attempt made while waiting is refused (429 with ``Retry-After``) without being judged, so it
costs no password hash and adds no failure. A success clears the e-mail's count (not the
address's: one account of the attacker's must not reset an address that guesses others').
Counts older than ``FORGET`` start again from nothing.

"Per account" is per e-mail as typed (lower-cased, hashed): an unknown e-mail is counted and
delayed exactly like a known one, so the delays tell nothing about which exist. An IPv6
client counts by its /64, the block one host may rotate through.

Kept in PostgreSQL (table ``signin_throttle``, sql/022), not Redis: the api talks to nothing
else (a sign-in already writes its session there), every api process shares it, and the
failures of one sign-in are a few rows a second at worst, well within what one upsert costs.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

FORGET = timedelta(days=1)


@dataclass(frozen=True)
class Policy:
    free: int  # failures before any delay
    base: float  # seconds of the first delay
    maximum: float  # the longest delay

    def delay(self, failures: int) -> float:
        """Seconds to wait after the last of ``failures`` failures."""
        if failures < self.free:
            return 0.0
        return min(self.maximum, self.base * 2.0 ** min(failures - self.free, 64))

    def wait(self, failures: int, last_failure: datetime | None, now: datetime) -> float:
        """Seconds until the next attempt may be judged (0: now)."""
        if last_failure is None or now - last_failure >= FORGET:
            return 0.0
        return max(0.0, (last_failure - now).total_seconds() + self.delay(failures))


@dataclass(frozen=True)
class Key:
    scope: str  # "email" or "address"
    key: bytes

    @classmethod
    def email(cls, email: str) -> Key:
        return cls("email", hashlib.sha256(email.strip().lower().encode()).digest())

    @classmethod
    def address(cls, address: str | None) -> Key:
        return cls("address", hashlib.sha256(address_block(address).encode()).digest())


def address_block(address: str | None) -> str:
    """What one client is counted by: its IPv4 address, its IPv6 /64."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return address or "unknown"
    if ip.version == 6 and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(getattr(ip, "ipv4_mapped", None) or ip)


async def wait(conn: asyncpg.Connection, checks: Sequence[tuple[Key, Policy]]) -> float:
    """The longest wait any of ``checks`` imposes right now."""
    rows = await conn.fetch(
        """SELECT t.scope, t.key, t.failures, t.last_failure, now() AS now
           FROM signin_throttle t
           WHERE (t.scope, t.key) IN (SELECT * FROM unnest($1::text[], $2::bytea[]))""",
        [k.scope for k, _ in checks],
        [k.key for k, _ in checks],
    )
    found = {(r["scope"], bytes(r["key"])): r for r in rows}
    longest = 0.0
    for key, policy in checks:
        row = found.get((key.scope, key.key))
        if row is not None:
            longest = max(longest, policy.wait(row["failures"], row["last_failure"], row["now"]))
    return longest


async def failed(conn: asyncpg.Connection, keys: Sequence[Key]) -> None:
    """Count one failure against each of ``keys`` (a count older than FORGET starts again)."""
    await conn.execute(
        """INSERT INTO signin_throttle AS t (scope, key, failures, last_failure)
           SELECT scope, key, 1, now() FROM unnest($1::text[], $2::bytea[]) AS u(scope, key)
           ON CONFLICT (scope, key) DO UPDATE SET
               failures = CASE WHEN t.last_failure < now() - $3::interval THEN 1 ELSE t.failures + 1 END,
               last_failure = now()""",
        [k.scope for k in keys],
        [k.key for k in keys],
        FORGET,
    )


async def succeeded(conn: asyncpg.Connection, key: Key) -> None:
    await conn.execute("DELETE FROM signin_throttle WHERE scope = $1 AND key = $2", key.scope, key.key)


async def sweep(conn: asyncpg.Connection) -> int:
    """Forget the counts older than FORGET: how many rows went."""
    deleted: str = await conn.execute(
        "DELETE FROM signin_throttle WHERE last_failure < now() - $1::interval", FORGET
    )
    return int(deleted.split()[-1])
