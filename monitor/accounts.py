"""Accounts and their API keys: creation, lookup by key, revocation.

A key is ``mk_<prefix>_<secret>``: 32 random bytes of secret, shown once. Only a
SHA-256 of the whole key is stored (a random secret needs no slow hash); the prefix
lets an owner tell keys apart in a listing.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import asyncpg

KEY_PREFIX = "mk_"


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


async def create_account(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int:
    account_id = await conn.fetchval(
        "INSERT INTO accounts (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id", name
    )
    if account_id is None:
        raise ValueError(f"an account named {name!r} exists already")
    return int(account_id)


async def account_id_by_name(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int | None:
    value = await conn.fetchval("SELECT id FROM accounts WHERE name = $1", name)
    return None if value is None else int(value)


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
