"""Accounts and their API keys: creation, deletion, lookup by key, revocation.

A key is ``mk_<prefix>_<secret>``: 32 random bytes of secret, shown once. Only a
SHA-256 of the whole key is stored (a random secret needs no slow hash); the prefix
lets an owner tell keys apart in a listing.

Deleting an account deletes what the schema hangs on it (``ON DELETE CASCADE``: keys, channels,
maintenance windows, status pages, monitors and with them their state, incidents, secrets and
channel links), and the rows of its monitors that have no foreign key: the hourly and daily
rollups and pings not yet read. Each deleted monitor row fires the ``monitors_changed``
trigger, so schedulers stop checking them at once, as after ``DELETE /api/v1/monitors/{id}``.
Raw checks stay until retention drops them (``MONITOR_RETENTION_DAYS``; a key check on that
hypertable was left out on purpose, sql/001), and deliveries stay as the record of what was sent.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from monitor.names import name_problem

KEY_PREFIX = "mk_"
MAX_ACCOUNT_NAME = 100  # the accounts.name CHECK constraint (sql/002)


@dataclass(frozen=True)
class NewKey:
    id: int
    account_id: int
    name: str
    prefix: str
    key: str  # shown once, never stored


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def generate_key() -> tuple[str, str]:
    prefix = secrets.token_hex(4)
    return f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}", prefix


@dataclass(frozen=True)
class Account:
    id: int
    name: str
    created_at: datetime
    monitors: int
    active_keys: int


@dataclass(frozen=True)
class Key:
    """An API key as listed: never the key, which is not stored."""

    id: int
    account: str
    name: str
    prefix: str  # the key's first characters, as in ``mk_<prefix>_...``
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class Contents:
    """What an account holds: what deleting it deletes."""

    id: int
    name: str
    monitors: int
    channels: int
    keys: int  # revoked ones too
    status_pages: int
    maintenance_windows: int

    def summary(self) -> str:
        counts = {
            "monitor": self.monitors, "channel": self.channels, "API key": self.keys,
            "status page": self.status_pages, "maintenance window": self.maintenance_windows,
        }  # fmt: skip
        return ", ".join(f"{n} {what}{'' if n == 1 else 's'}" for what, n in counts.items())


_CONTENTS = """SELECT a.id, a.name,
       (SELECT count(*) FROM monitors WHERE account_id = a.id) AS monitors,
       (SELECT count(*) FROM channels WHERE account_id = a.id) AS channels,
       (SELECT count(*) FROM api_keys WHERE account_id = a.id) AS keys,
       (SELECT count(*) FROM status_pages WHERE account_id = a.id) AS status_pages,
       (SELECT count(*) FROM maintenance_windows WHERE account_id = a.id) AS maintenance_windows
FROM accounts a WHERE a.name = $1"""


async def account_contents(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> Contents | None:
    """What the account ``name`` holds; None if there is no such account."""
    row = await conn.fetchrow(_CONTENTS, name)
    return None if row is None else Contents(**dict(row))


async def delete_account(conn: asyncpg.Connection, name: str) -> Contents | None:
    """Delete the account ``name`` and everything in it, in one transaction; what it held, or
    None if there is no such account."""
    async with conn.transaction():
        if await conn.fetchval("SELECT id FROM accounts WHERE name = $1 FOR UPDATE", name) is None:
            return None
        held = await account_contents(conn, name)
        assert held is not None
        monitors = "SELECT id FROM monitors WHERE account_id = $1"
        for table in ("checks_hourly", "checks_daily", "pings"):
            await conn.execute(f"DELETE FROM {table} WHERE monitor_id IN ({monitors})", held.id)
        await conn.execute("DELETE FROM accounts WHERE id = $1", held.id)
    return held


def check_account_name(name: str) -> None:
    """Raise ValueError saying what is wrong with ``name`` as an account name."""
    if len(name) > MAX_ACCOUNT_NAME:
        raise ValueError(f"an account name has at most {MAX_ACCOUNT_NAME} characters ({len(name)} given)")
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"an account name {problem}")


async def create_account(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int:
    """The id of a new account ``name``; ValueError if the name is not valid or is taken."""
    check_account_name(name)
    account_id = await conn.fetchval(
        "INSERT INTO accounts (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id", name
    )
    if account_id is None:
        raise ValueError(f"an account named {name!r} exists already")
    return int(account_id)


async def account_id_by_name(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int | None:
    value = await conn.fetchval("SELECT id FROM accounts WHERE name = $1", name)
    return None if value is None else int(value)


async def list_accounts(conn: asyncpg.Connection | asyncpg.Pool) -> list[Account]:
    rows = await conn.fetch(
        """SELECT a.id, a.name, a.created_at,
                  (SELECT count(*) FROM monitors m WHERE m.account_id = a.id) AS monitors,
                  (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)
                      AS active_keys
           FROM accounts a ORDER BY a.id"""
    )
    return [Account(**dict(row)) for row in rows]


async def list_keys(conn: asyncpg.Connection | asyncpg.Pool, account_id: int | None = None) -> list[Key]:
    """Every key (or every key of one account), revoked ones included, oldest first."""
    rows = await conn.fetch(
        """SELECT k.id, a.name AS account, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
           WHERE $1::bigint IS NULL OR k.account_id = $1 ORDER BY k.id""",
        account_id,
    )
    return [_key(row) for row in rows]


async def revoke_key(conn: asyncpg.Connection | asyncpg.Pool, key_id: int) -> tuple[Key, bool] | None:
    """Revoke the key ``key_id``: the key as revoked, and whether this call revoked it (False:
    it was revoked already, and keeps that time); None if there is no such key."""
    row = await conn.fetchrow(
        """WITH old AS (SELECT id, revoked_at FROM api_keys WHERE id = $1 FOR UPDATE)
           UPDATE api_keys k SET revoked_at = coalesce(old.revoked_at, now())
           FROM old, accounts a WHERE k.id = old.id AND a.id = k.account_id
           RETURNING k.id, a.name AS account, k.name, k.prefix, k.created_at, k.last_used_at,
                     k.revoked_at, old.revoked_at IS NULL AS newly""",
        key_id,
    )
    if row is None:
        return None
    return _key(row), bool(row["newly"])


def _key(row: asyncpg.Record) -> Key:
    fields = {name: row[name] for name in Key.__dataclass_fields__}
    return Key(**{**fields, "prefix": f"{KEY_PREFIX}{row['prefix']}"})


async def create_key(conn: asyncpg.Connection | asyncpg.Pool, account_id: int, name: str = "") -> NewKey:
    key, prefix = generate_key()
    key_id = await conn.fetchval(
        "INSERT INTO api_keys (account_id, name, prefix, hash) VALUES ($1, $2, $3, $4) RETURNING id",
        account_id,
        name,
        prefix,
        hash_key(key),
    )
    return NewKey(int(key_id), account_id, name, prefix, key)


async def account_for_key(conn: asyncpg.Connection | asyncpg.Pool, key: str) -> tuple[int, int] | None:
    """(account_id, key_id) of a valid, unrevoked key; None otherwise."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    row = await conn.fetchrow(
        "SELECT id, account_id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", hash_key(key)
    )
    return None if row is None else (int(row["account_id"]), int(row["id"]))
