"""API keys of an account: made (the secret shown once), listed, revoked; and the look-up that
turns a key into its caller.

A key is ``mk_<prefix>_<secret>``: 32 random bytes of secret. Only a SHA-256 of the whole key
is stored (a random secret needs no slow hash); the prefix lets an owner tell keys apart in a
listing. A revoked key stays listed, with the time it was revoked.

A key carries a role (sql/021): given when it is made, no higher than its maker's, the maker's
own when not given; a key made before roles is its account's owner. Its maker and when it was
last used (to the minute: a request writes ``last_used_at`` only when it is a minute old, so a
busy key costs one write a minute, not one a request) are listed with it.

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

from monitor.domain import audit, paging
from monitor.domain.context import ROLES, Actor, Deps, Role
from monitor.domain.errors import not_found, validated
from monitor.domain.roles import authorize, within
from monitor.domain.schemas.keys import KeyCreate
from monitor.times import rfc3339_or_none

RESOURCE = "keys"
WHAT = "key"
KEY_PREFIX = "mk_"
# last_used_at is written when it is older than this (or unset).
TOUCH_SECONDS = 60
SELECT = "SELECT t.*, u.email AS maker_email FROM api_keys t LEFT JOIN users u ON u.id = t.created_by"


@dataclass(frozen=True)
class Caller:
    """What a valid key says of its caller."""

    account_id: int
    key_id: int
    role: Role


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
    role: Role
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
        "role": row["role"],
        "created_by": None
        if row["created_by"] is None
        else {"id": row["created_by"], "email": row["maker_email"]},
        "created_at": rfc3339_or_none(row["created_at"]),
        "last_used_at": rfc3339_or_none(row["last_used_at"]),
        "revoked_at": rfc3339_or_none(row["revoked_at"]),
    }


# -- the store ------------------------------------------------------------------------------------


async def create_key(
    conn: asyncpg.Connection | asyncpg.Pool,
    account_id: int,
    name: str = "",
    role: Role = "owner",
    created_by: int | None = None,
) -> NewKey:
    """A new key of ``account_id``, stored as its hash."""
    key, prefix = generate_key()
    key_id = await conn.fetchval(
        """INSERT INTO api_keys (account_id, name, prefix, hash, role, created_by)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id""",
        account_id,
        name,
        prefix,
        hash_key(key),
        role,
        created_by,
    )
    return NewKey(int(key_id), account_id, name, prefix, key)


async def account_for_key(conn: asyncpg.Connection | asyncpg.Pool, key: str) -> tuple[int, int] | None:
    """(account_id, key_id) of a valid, unrevoked key; None otherwise. What a face makes its
    ``Actor`` from."""
    found = await caller_for_key(conn, key)
    return None if found is None else (found.account_id, found.key_id)


async def caller_for_key(conn: asyncpg.Connection | asyncpg.Pool, key: str) -> Caller | None:
    """The account, id and role of a valid, unrevoked key; None otherwise. Marks it used (when
    its ``last_used_at`` is ``TOUCH_SECONDS`` old) in the same statement."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    row = await conn.fetchrow(
        """WITH k AS (SELECT id, account_id, role, last_used_at FROM api_keys
                      WHERE hash = $1 AND revoked_at IS NULL),
                touched AS (UPDATE api_keys t SET last_used_at = now() FROM k
                            WHERE t.id = k.id AND (k.last_used_at IS NULL
                                  OR k.last_used_at < now() - make_interval(secs => $2)))
           SELECT id, account_id, role FROM k""",
        hash_key(key),
        TOUCH_SECONDS,
    )
    return None if row is None else Caller(int(row["account_id"]), int(row["id"]), row["role"])


# -- operations -----------------------------------------------------------------------------------


async def create(deps: Deps, actor: Actor, body: Mapping[str, Any]) -> dict[str, Any]:
    """A new key of the caller's account; the answer is the only place the key itself is shown."""
    authorize(actor, RESOURCE, "write")
    spec = validated(KeyCreate, body)
    role = spec.role or actor.role
    within(actor, role)
    async with deps.pool.acquire() as conn, conn.transaction():
        new = await create_key(conn, actor.account_id, spec.name, role, actor.user_id)
        await audit.record(conn, actor, RESOURCE, "create", new.id, spec.model_fields_set)
        row = await conn.fetchrow(SELECT + " WHERE t.id = $1", new.id)
    return {**render(row), "key": new.key}


async def listing(
    deps: Deps, actor: Actor, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    return await paging.account_listing(deps.pool, SELECT, actor.account_id, limit, cursor, render)


async def revoke(deps: Deps, actor: Actor, key_id: int) -> Revoked:
    """Revoke a key of the caller's account (requests with it get 401 from now on); one revoked
    already keeps the time it was."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await _revoke(conn, actor, key_id)
        if row is not None and row["newly"]:
            await audit.record(conn, actor, RESOURCE, "revoke", key_id)
    if row is None:
        raise not_found(WHAT)
    return Revoked(_key(row), bool(row["newly"]))


async def _revoke(conn: asyncpg.Connection, actor: Actor, key_id: int) -> asyncpg.Record | None:
    return await conn.fetchrow(
        """WITH old AS (SELECT id, revoked_at FROM api_keys WHERE id = $1 AND account_id = $2 FOR UPDATE)
           UPDATE api_keys k SET revoked_at = coalesce(old.revoked_at, now())
           FROM old, accounts a WHERE k.id = old.id AND a.id = k.account_id
           RETURNING k.id, a.name AS account, k.name, k.prefix, k.role, k.created_at, k.last_used_at,
                     k.revoked_at, old.revoked_at IS NULL AS newly""",
        key_id,
        actor.account_id,
    )


# -- for the operator -----------------------------------------------------------------------------


async def every(deps: Deps, account_id: int | None = None) -> list[Key]:
    """Every key (or every key of one account), revoked ones included, oldest first."""
    rows = await deps.pool.fetch(
        """SELECT k.id, a.name AS account, k.name, k.prefix, k.role, k.created_at, k.last_used_at,
                  k.revoked_at
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
           WHERE $1::bigint IS NULL OR k.account_id = $1 ORDER BY k.id""",
        account_id,
    )
    return [_key(row) for row in rows]


async def account_of(deps: Deps, key_id: int) -> int | None:
    """The account the key ``key_id`` belongs to; None if there is no such key."""
    value = await deps.pool.fetchval("SELECT account_id FROM api_keys WHERE id = $1", key_id)
    return None if value is None else int(value)


def above(role: Role) -> list[Role]:
    """The roles above ``role``: what a key of a member demoted to ``role`` may no longer hold."""
    return list(ROLES[ROLES.index(role) + 1 :])


def _key(row: Mapping[str, Any]) -> Key:
    fields = {name: row[name] for name in Key.__dataclass_fields__}
    return Key(**{**fields, "prefix": f"{KEY_PREFIX}{row['prefix']}"})
