"""The audit log: who changed what in an account, when, and from where.

Every write operation of the domain records one row (``record``), on the connection of its own
transaction where it has one, so a change and its record are written together or not at all.
A row names the caller (the signed-in user, or the key and the member who made it), the
resource, the object's id, the operation and the names of the fields the request gave, never
their values: a channel's secret or a member's password never reaches this table. The
operator's command line acts with no key or user; its rows say so (both null) and come from no
address.

Listing it is for admins and owners (``roles.RULES``), newest first, in keyset pages, filtered
by resource, operation, user or key. Rows older than ``MONITOR_AUDIT_RETENTION_DAYS`` are swept
by the scheduler (``monitor/scheduler/retention.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import asyncpg

from monitor.domain import paging
from monitor.domain.context import Actor, Deps
from monitor.domain.roles import authorize
from monitor.times import rfc3339

RESOURCE = "audit"
FILTERS = ("resource", "operation", "user_id", "key_id", "object_id")
_INSERT = """INSERT INTO audit_log
                 (account_id, user_id, key_id, resource, object_id, operation, fields, address)
             VALUES ($1, coalesce($2, (SELECT created_by FROM api_keys WHERE id = $3)),
                     $3, $4, $5, $6, $7, $8)"""


async def record(
    conn: asyncpg.Connection | asyncpg.Pool,
    actor: Actor,
    resource: str,
    operation: str,
    object_id: object = None,
    fields: Iterable[str] = (),
) -> None:
    """One row of the log: ``fields`` are names only (a body's keys), sorted."""
    await conn.execute(
        _INSERT,
        actor.account_id,
        actor.user_id,
        actor.key_id,
        resource,
        None if object_id is None else str(object_id),
        operation,
        sorted(set(fields)),
        actor.address,
    )


async def record_many(
    conn: asyncpg.Connection,
    actor: Actor,
    resource: str,
    operation: str,
    objects: Sequence[tuple[object, Iterable[str]]],
) -> None:
    """:func:`record`'s row for each (object id, fields) of ``objects``, in one batch."""
    await conn.executemany(
        _INSERT,
        [
            (actor.account_id, actor.user_id, actor.key_id, resource, None if oid is None else str(oid),
             operation, sorted(set(fields)), actor.address)
            for oid, fields in objects
        ],
    )  # fmt: skip


def fields_of(body: Mapping[str, Any]) -> list[str]:
    """The names of the fields a body gave, and of those one level into an object it gave
    (``config.url``): what an audit row records of a change, never the values."""
    names = []
    for name, value in body.items():
        names.append(str(name))
        if isinstance(value, Mapping):
            names.extend(f"{name}.{inner}" for inner in value)
    return names


def render(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "at": rfc3339(row["at"]),
        "user": None if row["user_id"] is None else {"id": row["user_id"], "email": row["email"]},
        "key_id": row["key_id"],
        "resource": row["resource"],
        "object_id": row["object_id"],
        "operation": row["operation"],
        "fields": list(row["fields"]),
        "address": row["address"],
    }


async def listing(
    deps: Deps,
    actor: Actor,
    *,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
    filters: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """One page of the account's log, newest first; ``filters`` by ``FILTERS`` (equal values)."""
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    before = paging.decode_cursor(cursor, (int,))
    given = {name: value for name, value in (filters or {}).items() if value is not None}
    where = ["a.account_id = $1", "a.id < $2"]
    args: list[object] = [actor.account_id, before[0] if before else paging.MAX_ID]
    for name in FILTERS:
        if name in given:
            args.append(str(given[name]) if name == "object_id" else given[name])
            where.append(f"a.{name} = ${len(args)}")
    args.append(limit + 1)
    rows = await deps.pool.fetch(
        f"""SELECT a.*, u.email FROM audit_log a LEFT JOIN users u ON u.id = a.user_id
            WHERE {" AND ".join(where)} ORDER BY a.id DESC LIMIT ${len(args)}""",
        *args,
    )
    page, next_cursor = paging.next_page(rows, limit)
    return {"items": [render(row) for row in page], "next_cursor": next_cursor}
