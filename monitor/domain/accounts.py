"""Accounts: made, listed, looked up by name, and deleted with everything in them.

Every monitor, channel, key, status page and maintenance window belongs to one account, and an
account's objects are invisible to every other (404). Making and listing accounts span the
installation, so they take no caller: the operator's command line (``monitor accounts``) calls
them, holding the database itself. What an account holds and its deletion are the account's
own operations, asked as its owner.

Deleting an account deletes what the schema hangs on it (``ON DELETE CASCADE``: keys, channels,
maintenance windows, status pages, monitors and with them their state, incidents, secrets and
channel links), and the rows of its monitors that have no foreign key: the hourly and daily
rollups and pings not yet read. Each deleted monitor row fires the ``monitors_changed``
trigger, so schedulers stop checking them at once, as after ``DELETE /api/v1/monitors/{id}``.
Raw checks stay until retention drops them (``MONITOR_RETENTION_DAYS``; a key check on that
hypertable was left out on purpose, sql/001), and deliveries stay as the record of what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found
from monitor.domain.roles import authorize
from monitor.maintenance import RuleError, zone
from monitor.names import name_problem

RESOURCE = "accounts"
MAX_ACCOUNT_NAME = 100  # the accounts.name CHECK constraint (sql/002)


@dataclass(frozen=True)
class Account:
    id: int
    name: str
    created_at: datetime
    monitors: int
    active_keys: int


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


def check_account_name(name: str) -> None:
    """Raise ValueError saying what is wrong with ``name`` as an account name."""
    if len(name) > MAX_ACCOUNT_NAME:
        raise ValueError(f"an account name has at most {MAX_ACCOUNT_NAME} characters ({len(name)} given)")
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"an account name {problem}")


# -- the store ------------------------------------------------------------------------------------


async def create_account(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int:
    """The id of a new account ``name``; ValueError if the name is not valid or is taken."""
    check_account_name(name)
    account_id = await _insert(conn, name)
    if account_id is None:
        raise ValueError(_taken(name))
    return account_id


async def _insert(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int | None:
    """The id of a new account ``name``; None if one has the name already."""
    value = await conn.fetchval(
        "INSERT INTO accounts (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id", name
    )
    return None if value is None else int(value)


def _taken(name: str) -> str:
    return f"an account named {name!r} exists already"


async def account_id_by_name(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> int | None:
    value = await conn.fetchval("SELECT id FROM accounts WHERE name = $1", name)
    return None if value is None else int(value)


_CONTENTS = """SELECT a.id, a.name,
       (SELECT count(*) FROM monitors WHERE account_id = a.id) AS monitors,
       (SELECT count(*) FROM channels WHERE account_id = a.id) AS channels,
       (SELECT count(*) FROM api_keys WHERE account_id = a.id) AS keys,
       (SELECT count(*) FROM status_pages WHERE account_id = a.id) AS status_pages,
       (SELECT count(*) FROM maintenance_windows WHERE account_id = a.id) AS maintenance_windows
FROM accounts a WHERE a.id = $1"""


# -- for the operator -----------------------------------------------------------------------------


async def create(
    deps: Deps, name: str, conn: asyncpg.Connection | None = None, *, field: str = "name"
) -> int:
    """A new account ``name``: its id; 422 for a name that cannot be one, 409 for one taken,
    both naming ``field`` (the message does not: the operator's command line prints it as it is).
    ``conn``: within the caller's transaction."""
    try:
        check_account_name(name)
    except ValueError as exc:
        raise DomainError(422, "invalid", str(exc), field) from None
    account_id = await _insert(conn or deps.pool, name)
    if account_id is None:
        raise DomainError(409, "conflict", _taken(name), field)
    return account_id


async def find(deps: Deps, name: str) -> int | None:
    """The id of the account ``name``; None if there is none."""
    return await account_id_by_name(deps.pool, name)


async def every(deps: Deps) -> list[Account]:
    """Every account, oldest first, with its monitors and its keys not revoked."""
    rows = await deps.pool.fetch(
        """SELECT a.id, a.name, a.created_at,
                  (SELECT count(*) FROM monitors m WHERE m.account_id = a.id) AS monitors,
                  (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL)
                      AS active_keys
           FROM accounts a ORDER BY a.id"""
    )
    return [Account(**dict(row)) for row in rows]


# -- the account's own ----------------------------------------------------------------------------


async def contents(deps: Deps, actor: Actor) -> Contents:
    """What the caller's account holds."""
    authorize(actor, RESOURCE, "read")
    row = await deps.pool.fetchrow(_CONTENTS, actor.account_id)
    if row is None:
        raise not_found("account")
    return Contents(**dict(row))


async def set_timezone(deps: Deps, actor: Actor, name: str) -> str:
    """The caller's account's time zone (an IANA name): the calendar its SLA reports' months
    and quarters are cut in (``domain/reports.py``); the name as stored."""
    authorize(actor, RESOURCE, "write")
    try:
        zone(name)
    except RuleError as exc:
        raise DomainError(400, "invalid", f"timezone: {exc}", "timezone") from None
    if await deps.pool.fetchval(
        "UPDATE accounts SET timezone = $2 WHERE id = $1 RETURNING id", actor.account_id, name
    ) is None:  # fmt: skip
        raise not_found("account")
    return name


async def delete(deps: Deps, actor: Actor) -> Contents:
    """Delete the caller's account and everything in it, in one transaction; what it held."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        if await conn.fetchval("SELECT id FROM accounts WHERE id = $1 FOR UPDATE", actor.account_id) is None:
            raise not_found("account")
        held = Contents(**dict(await conn.fetchrow(_CONTENTS, actor.account_id)))
        monitors = "SELECT id FROM monitors WHERE account_id = $1"
        for table in ("checks_hourly", "checks_daily", "pings"):
            await conn.execute(f"DELETE FROM {table} WHERE monitor_id IN ({monitors})", held.id)
        await conn.execute("DELETE FROM accounts WHERE id = $1", held.id)
    return held
