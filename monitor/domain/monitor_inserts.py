"""New monitors written, one or ten thousand, by the same rules: ``monitors.create`` writes one
with it and ``monitors.create_many`` (``monitor apply``) many in one transaction.

Made one at a time, 10,000 monitors took a minute: about twenty round trips each (a quota count
that grows with the account, the dependencies, the row, its state, its channels, the audit row,
a re-read). Here every rule is judged for all of them first, in a few queries whatever their
number, and each table is written with one batched statement (asyncpg's ``executemany``, one
round trip). The rules, in the order one create judges them, the first broken one by the first
body that breaks it raised as that body's :class:`ItemError`, nothing written:

1. the account's quota (409, counted with its row locked: the monitors the account holds and
   the bodies before this one),
2. ``depends_on``: monitors of the account (422 ``depends_on: no monitor N``; a new monitor
   cannot be in a cycle: nothing depends on it yet),
3. ``channel_ids``: channels of the account (422 ``channel_ids: no channel N``).

The ids follow the bodies' order, as they would made one after another.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any, NamedTuple

import asyncpg

from monitor.domain import audit
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.monitor_links import UNSET, set_channels
from monitor.domain.monitor_types import store_secrets_many

RESOURCE = "monitors"


class New(NamedTuple):
    """A monitor to write: its ``monitors`` columns and what goes beside them."""

    values: dict[str, Any]  # the columns (``Prepared.values``, a heartbeat's ``ping_token``)
    secrets: dict[str, Any] | None
    paused: bool
    channel_ids: list[int]
    chat: Any  # ``telegram_chat_id`` if the body gave it, else ``UNSET``
    fields: list[str]  # the body's field names, for the audit row


class ItemError(DomainError):
    """The error of the ``index``-th of several bodies (the same status, code and message)."""

    def __init__(self, index: int, error: DomainError) -> None:
        super().__init__(error.status, error.code, error.message, error.field, headers=error.headers)
        self.index = index
        self.error = error


async def first_problem(
    conn: asyncpg.Connection, deps: Deps, actor: Actor, new: Sequence[New]
) -> ItemError | None:
    """The first broken rule of ``new`` (module docstring), or None. Locks the account's row."""
    account = actor.account_id
    # Serialise creations of one account, so two at once cannot both slip under the quota.
    await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
    quota = deps.settings.account_monitor_quota
    held = await conn.fetchval("SELECT count(*) FROM monitors WHERE account_id = $1", account)
    over = max(quota - held, 0) if held + len(new) > quota else len(new)
    wanted = {m for n in new[:over] for m in n.values["depends_on"]}
    monitors = await _found(conn, "monitors", account, wanted)
    channels = await _found(conn, "channels", account, {c for n in new[:over] for c in n.channel_ids})
    for index, item in enumerate(new[:over]):
        missing = [m for m in dict.fromkeys(item.values["depends_on"]) if m not in monitors]
        if missing:
            error = DomainError(422, "invalid", f"depends_on: no monitor {missing[0]}", "depends_on")
            return ItemError(index, error)
        absent = sorted(set(item.channel_ids) - channels)
        if absent:
            error = DomainError(422, "invalid", f"channel_ids: no channel {absent[0]}", "channel_ids")
            return ItemError(index, error)
    if over < len(new):
        return ItemError(
            over, DomainError(409, "quota_exceeded", f"this account has its quota of {quota} monitors")
        )
    return None


async def _found(conn: asyncpg.Connection, table: str, account: int, ids: set[int]) -> set[int]:
    if not ids:
        return set()
    rows = await conn.fetch(
        f"SELECT id FROM {table} WHERE account_id = $1 AND id = ANY($2::bigint[])", account, list(ids)
    )
    return {r["id"] for r in rows}


async def write(conn: asyncpg.Connection, deps: Deps, actor: Actor, new: Sequence[New]) -> list[int]:
    """Write ``new`` (judged by :func:`first_problem` in this transaction); their ids, in order."""
    if not new:
        return []
    account = actor.account_id
    rows = [{**n.values, "depends_on": list(dict.fromkeys(n.values["depends_on"]))} for n in new]
    groups = [(columns, list(g)) for columns, g in groupby(range(len(rows)), key=lambda i: tuple(rows[i]))]
    ids: list[int]
    if len(groups) == 1:
        ids = [
            r["id"] for r in await conn.fetchmany(_insert(groups[0][0]), [_args(account, r) for r in rows])
        ]
    else:
        # Bodies of several types have several column sets: ids drawn first keep the bodies' order.
        ids = [
            r["id"]
            for r in await conn.fetch(
                """SELECT nextval(pg_get_serial_sequence('monitors', 'id')) AS id
                   FROM generate_series(1, $1) ORDER BY 1""",
                len(rows),
            )
        ]
        by_columns: dict[tuple[str, ...], list[int]] = {}
        for columns, members in groups:
            by_columns.setdefault(columns, []).extend(members)
        for columns, members in by_columns.items():
            await conn.executemany(
                _insert(columns, with_id=True), [(ids[i], *_args(account, rows[i])) for i in members]
            )
    await conn.executemany("INSERT INTO monitor_state (monitor_id) VALUES ($1)", [(i,) for i in ids])
    await store_secrets_many(
        conn,
        deps.secret_box,
        [(i, n.secrets) for i, n in zip(ids, new, strict=True) if n.secrets is not None],
    )
    await conn.executemany(
        "INSERT INTO monitor_pauses (monitor_id, started_at) VALUES ($1, now())",
        [(i,) for i, n in zip(ids, new, strict=True) if n.paused],
    )
    links: list[tuple[int, int]] = []
    for monitor_id, n in zip(ids, new, strict=True):
        if n.chat is UNSET:
            links.extend((monitor_id, c) for c in dict.fromkeys(n.channel_ids))
        else:  # the Telegram shortcut may make the chat's channel
            await set_channels(conn, account, monitor_id, n.channel_ids, n.chat)
    await conn.executemany("INSERT INTO monitor_channels (monitor_id, channel_id) VALUES ($1, $2)", links)
    await audit.record_many(
        conn, actor, RESOURCE, "create", [(i, n.fields) for i, n in zip(ids, new, strict=True)]
    )
    return ids


def _insert(columns: tuple[str, ...], *, with_id: bool = False) -> str:
    names = ", ".join(columns)
    if with_id:
        places = ", ".join(f"${i}" for i in range(3, len(columns) + 3))
        return (
            f"INSERT INTO monitors (id, account_id, {names}) OVERRIDING SYSTEM VALUE"
            f" VALUES ($1, $2, {places})"
        )
    places = ", ".join(f"${i}" for i in range(2, len(columns) + 2))
    return f"INSERT INTO monitors (account_id, {names}) VALUES ($1, {places}) RETURNING id"


def _args(account: int, row: dict[str, Any]) -> tuple[Any, ...]:
    return (account, *row.values())
