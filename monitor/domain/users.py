"""Users: people who sign in, each a member of one or more accounts (``members.py``).

A user has an e-mail, unique whatever its case (sql/021's index on ``lower(email)``: the address
is kept as given, looked up lower-cased), a display name, and a password hashed with argon2id
(``monitor/passwords.py``: at least 12 characters, not a common one), or none yet (one invited,
or one who signs in only through single sign-on).

Making users and listing them span the installation, so these take no caller: the operator's
command line (``monitor users``) calls them, holding the database itself; what a user may do in
an account is their membership's role.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from monitor import passwords
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError, validated
from monitor.domain.schemas.members import UserCreate


@dataclass(frozen=True)
class User:
    id: int
    email: str
    display_name: str
    created_at: datetime
    has_password: bool
    accounts: tuple[tuple[str, str], ...] = ()  # (account name, role)


def check_password(password: str, field: str = "password") -> None:
    """A 422 naming ``field`` unless ``password`` may be a new password."""
    found = passwords.problem(password)
    if found is not None:
        raise DomainError(422, "invalid", f"{field}: {found}", field)


async def hash_password(deps: Deps, password: str) -> str:
    """``password`` hashed off the loop; 503 when too many are being hashed at once."""
    try:
        return await deps.hasher.hash(password)
    except passwords.Busy:
        raise DomainError(503, "busy", "too many passwords are being checked; retry shortly",
                          headers={"Retry-After": "1"}) from None  # fmt: skip


async def create(
    deps: Deps, body: Mapping[str, Any], password: str | None, conn: asyncpg.Connection | None = None
) -> int:
    """A new user: its id. 422 naming the field at fault (a weak password: ``password``), 409 for
    an e-mail taken in any case. ``conn``: within the caller's transaction."""
    spec = validated(UserCreate, body)
    hashed = None
    if password is not None:
        check_password(password)
        hashed = await hash_password(deps, password)
    user_id = await (conn or deps.pool).fetchval(
        """INSERT INTO users (email, display_name, password_hash) VALUES ($1, $2, $3)
           ON CONFLICT (lower(email)) DO NOTHING RETURNING id""",
        spec.email,
        spec.display_name,
        hashed,
    )
    if user_id is None:
        raise DomainError(409, "conflict", "email: a user with this e-mail exists already", "email")
    return int(user_id)


async def find(conn: asyncpg.Connection | asyncpg.Pool, email: str) -> int | None:
    """The id of the user with ``email`` (in any case); None if there is none."""
    value = await conn.fetchval("SELECT id FROM users WHERE lower(email) = lower($1)", email)
    return None if value is None else int(value)


async def every(deps: Deps) -> list[User]:
    """Every user, oldest first, with the accounts they belong to and their role in each."""
    rows = await deps.pool.fetch(
        """SELECT u.id, u.email, u.display_name, u.created_at,
                  u.password_hash IS NOT NULL AS has_password,
                  coalesce(array_agg(ARRAY[a.name, m.role] ORDER BY a.name)
                           FILTER (WHERE a.id IS NOT NULL), '{}') AS accounts
           FROM users u LEFT JOIN memberships m ON m.user_id = u.id
                LEFT JOIN accounts a ON a.id = m.account_id
           GROUP BY u.id ORDER BY u.id"""
    )
    return [_user(row) for row in rows]


def _user(row: Mapping[str, Any]) -> User:
    accounts = tuple((name, role) for name, role in row["accounts"])
    return User(
        row["id"], row["email"], row["display_name"], row["created_at"], row["has_password"], accounts
    )
