"""API keys of an account: made (the secret shown once), listed, revoked; and the look-up that
turns a key into its caller.

A key is ``mk_<prefix>_<secret>``: 32 random bytes of secret. Only a SHA-256 of the whole key
is stored (a random secret needs no slow hash); the prefix lets an owner tell keys apart in a
listing. A revoked key stays listed, with the time it was revoked.

Most operations act within the caller's account (``Actor``). Two span accounts and take no
caller: ``every`` and ``account_of``, for the operator's command line (``monitor keys``), which
holds the database itself.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from monitor.domain import paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import not_found, validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.keys import KeyCreate
from monitor.times import rfc3339_or_none

RESOURCE = "keys"
WHAT = "key"
KEY_PREFIX = "mk_"


@dataclass(frozen=True)
class NewKey:
    id: int
    account_id: int
    name: str
    prefix: str
    key: str  # shown once, never stored


@dataclass(frozen=True)
class Key:
    """An API key as the operator lists it: never the key, which is not stored."""

    id: int
    account: str
    name: str
    prefix: str  # the key's first characters, as in ``mk_<prefix>_...``
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class Revoked:
    key: Key
    newly: bool  # False: it was revoked already, and keeps that time


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def generate_key() -> tuple[str, str]:
    prefix = secrets.token_hex(4)
    return f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}", prefix


def render(row: Mapping[str, Any]) -> dict[str, Any]:
    """A key as its account sees it (``Key`` of the API's answers)."""
    return {
        "id": row["id"],
        "name": row["name"],
        "prefix": f"{KEY_PREFIX}{row['prefix']}",
        "created_at": rfc3339_or_none(row["created_at"]),
        "revoked_at": rfc3339_or_none(row["revoked_at"]),
    }


# -- the store ------------------------------------------------------------------------------------


async def create_key(conn: asyncpg.Connection | asyncpg.Pool, account_id: int, name: str = "") -> NewKey:
    """A new key of ``account_id``, stored as its hash."""
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
    """(account_id, key_id) of a valid, unrevoked key; None otherwise. What a face makes its
    ``Actor`` from."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    row = await conn.fetchrow(
        "SELECT id, account_id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", hash_key(key)
    )
    return None if row is None else (int(row["account_id"]), int(row["id"]))


# -- operations -----------------------------------------------------------------------------------


async def create(deps: Deps, actor: Actor, body: Mapping[str, Any]) -> dict[str, Any]:
    """A new key of the caller's account; the answer is the only place the key itself is shown."""
    authorize(actor, RESOURCE, "write")
    spec = validated(KeyCreate, body)
    new = await create_key(deps.pool, actor.account_id, spec.name)
    row = await deps.pool.fetchrow("SELECT * FROM api_keys WHERE id = $1", new.id)
    return {**render(row), "key": new.key}


async def listing(
    deps: Deps, actor: Actor, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    select = "SELECT * FROM api_keys t"
    return await paging.account_listing(deps.pool, select, actor.account_id, limit, cursor, render)


async def revoke(deps: Deps, actor: Actor, key_id: int) -> Revoked:
    """Revoke a key of the caller's account (requests with it get 401 from now on); one revoked
    already keeps the time it was."""
    authorize(actor, RESOURCE, "write")
    row = await deps.pool.fetchrow(
        """WITH old AS (SELECT id, revoked_at FROM api_keys WHERE id = $1 AND account_id = $2 FOR UPDATE)
           UPDATE api_keys k SET revoked_at = coalesce(old.revoked_at, now())
           FROM old, accounts a WHERE k.id = old.id AND a.id = k.account_id
           RETURNING k.id, a.name AS account, k.name, k.prefix, k.created_at, k.last_used_at,
                     k.revoked_at, old.revoked_at IS NULL AS newly""",
        key_id,
        actor.account_id,
    )
    if row is None:
        raise not_found(WHAT)
    return Revoked(_key(row), bool(row["newly"]))


# -- for the operator -----------------------------------------------------------------------------


async def every(deps: Deps, account_id: int | None = None) -> list[Key]:
    """Every key (or every key of one account), revoked ones included, oldest first."""
    rows = await deps.pool.fetch(
        """SELECT k.id, a.name AS account, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
           WHERE $1::bigint IS NULL OR k.account_id = $1 ORDER BY k.id""",
        account_id,
    )
    return [_key(row) for row in rows]


async def account_of(deps: Deps, key_id: int) -> int | None:
    """The account the key ``key_id`` belongs to; None if there is no such key."""
    value = await deps.pool.fetchval("SELECT account_id FROM api_keys WHERE id = $1", key_id)
    return None if value is None else int(value)


def _key(row: Mapping[str, Any]) -> Key:
    fields = {name: row[name] for name in Key.__dataclass_fields__}
    return Key(**{**fields, "prefix": f"{KEY_PREFIX}{row['prefix']}"})
