"""Members of an account: the users in it and the role each has there.

Roles are ranked (``roles.py``); an admin manages members, and nobody gives or takes more than
they hold: the role given is no higher than the caller's (``roles.within``), and a member whose
role is above the caller's is not theirs to change or remove (403). The last owner can neither
be demoted nor removed (409 naming ``role``): every account keeps someone who may delete it.
Changes to an account's members are serialised on its row (``FOR UPDATE``), so two owners
demoting each other at once leave one of them owner.

A member demoted keeps their keys, lowered to the new role; a member removed loses theirs
(revoked): a key holds no more than its maker does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg

from monitor.domain import audit, keys, paging, users
from monitor.domain.context import Actor, Deps, Role
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.roles import authorize, rank, within
from monitor.domain.schemas.members import MemberAdd, MemberPatch
from monitor.times import rfc3339

RESOURCE = "members"
WHAT = "member"
SELECT = """SELECT m.user_id AS id, m.account_id, u.email, u.display_name, m.role, m.created_at
FROM memberships m JOIN users u ON u.id = m.user_id"""


def render(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "email": row["email"],
        "display_name": row["display_name"],
        "role": row["role"],
        "created_at": rfc3339(row["created_at"]),
    }


async def listing(
    deps: Deps, actor: Actor, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    after = paging.decode_cursor(cursor, (int,))
    rows = await deps.pool.fetch(
        SELECT + " WHERE m.account_id = $1 AND m.user_id > $2 ORDER BY m.user_id LIMIT $3",
        actor.account_id,
        after[0] if after else 0,
        limit + 1,
    )
    page, next_cursor = paging.next_page(rows, limit)
    return {"items": [render(row) for row in page], "next_cursor": next_cursor}


async def add(deps: Deps, actor: Actor, body: Mapping[str, Any]) -> dict[str, Any]:
    """Make an existing user (by e-mail) a member with a role: 404 naming ``email`` for no such
    user (inviting one who has none comes with e-mail), 409 if they are a member already."""
    authorize(actor, RESOURCE, "write")
    spec = validated(MemberAdd, body)
    within(actor, spec.role)
    async with deps.pool.acquire() as conn, conn.transaction():
        user_id = await users.find(conn, spec.email)
        if user_id is None:
            raise DomainError(404, "not_found", "email: no user has this e-mail", "email")
        await add_user(conn, actor, user_id, spec.role, spec.model_fields_set)
        row = await _member(conn, actor, user_id)
    return render(row)


async def add_user(
    conn: asyncpg.Connection, actor: Actor, user_id: int, role: Role, fields: set[str] | None = None
) -> None:
    """``user_id`` joins the caller's account as ``role`` (the caller authorised already), in
    the caller's transaction; 409 if they are a member already."""
    added = await conn.fetchval(
        """INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3)
           ON CONFLICT DO NOTHING RETURNING user_id""",
        actor.account_id,
        user_id,
        role,
    )
    if added is None:
        raise DomainError(409, "conflict", "email: this user is a member already", "email")
    await audit.record(conn, actor, RESOURCE, "add", user_id, fields or {"email", "role"})


async def change_role(deps: Deps, actor: Actor, user_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
    authorize(actor, RESOURCE, "write")
    spec = validated(MemberPatch, body)
    within(actor, spec.role)
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _held(conn, actor, user_id)
        if current["role"] == "owner" and spec.role != "owner":
            await _not_last_owner(conn, actor, "the last owner cannot be demoted")
        await conn.execute(
            "UPDATE memberships SET role = $3 WHERE account_id = $1 AND user_id = $2",
            actor.account_id,
            user_id,
            spec.role,
        )
        await conn.execute(
            """UPDATE api_keys SET role = $3
               WHERE account_id = $1 AND created_by = $2 AND role = ANY($4::text[])""",
            actor.account_id,
            user_id,
            spec.role,
            keys.above(spec.role),
        )
        if spec.role != current["role"]:
            await audit.record(conn, actor, RESOURCE, "change_role", user_id, spec.model_fields_set)
        row = await _member(conn, actor, user_id)
    return render(row)


async def remove(deps: Deps, actor: Actor, user_id: int) -> None:
    """The user leaves the account (the user stays, in their other accounts); their keys in it
    are revoked."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _held(conn, actor, user_id)
        if current["role"] == "owner":
            await _not_last_owner(conn, actor, "the last owner cannot leave the account")
        await conn.execute(
            "DELETE FROM memberships WHERE account_id = $1 AND user_id = $2", actor.account_id, user_id
        )
        await conn.execute(
            """UPDATE api_keys SET revoked_at = now()
               WHERE account_id = $1 AND created_by = $2 AND revoked_at IS NULL""",
            actor.account_id,
            user_id,
        )
        await audit.record(conn, actor, RESOURCE, "remove", user_id)


async def _held(conn: asyncpg.Connection, actor: Actor, user_id: int) -> asyncpg.Record:
    """The member ``user_id`` with the account locked against other member changes; 404 if they
    are not one, 403 if their role is above the caller's."""
    await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", actor.account_id)
    row = await _member(conn, actor, user_id)
    if rank(row["role"]) > rank(actor.role):
        raise DomainError(403, "forbidden", f"a member with the role {row['role']} is not yours to change")
    return row


async def _not_last_owner(conn: asyncpg.Connection, actor: Actor, message: str) -> None:
    owners = await conn.fetchval(
        "SELECT count(*) FROM memberships WHERE account_id = $1 AND role = 'owner'", actor.account_id
    )
    if owners <= 1:
        raise DomainError(409, "conflict", f"role: {message}", "role")


async def _member(conn: asyncpg.Connection, actor: Actor, user_id: int) -> asyncpg.Record:
    row = await conn.fetchrow(
        SELECT + " WHERE m.account_id = $1 AND m.user_id = $2", actor.account_id, user_id
    )
    if row is None:
        raise not_found(WHAT)
    return row
