"""What a monitor is tied to within its account: the monitors it depends on (its caller's, not
itself, no cycle) and the channels its alerts go to (the caller's; a Telegram chat's channel
made on first use). Both are judged inside the write's transaction, with the account's row
locked where two changes at once could otherwise slip past the rule together.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from monitor.domain.errors import DomainError

# ``telegram_chat_id`` not in the body: the monitor's Telegram channels stay as they are.
UNSET: Any = object()

# The monitors ``$2`` (ids) depend on, directly or through others, within account ``$1``.
DEPENDENCY_CLOSURE = """
WITH RECURSIVE d(id) AS (
    SELECT unnest($2::bigint[])
    UNION SELECT unnest(m.depends_on) FROM monitors m JOIN d ON m.id = d.id WHERE m.account_id = $1
)
SELECT id FROM d"""


async def check_dependencies(
    conn: asyncpg.Connection, account: int, monitor_id: int | None, depends_on: list[int]
) -> list[int]:
    """``depends_on`` as stored: the caller's monitors, not itself, no cycle (422 otherwise).
    The account's row is locked first, so two changes at once cannot close a cycle together."""
    wanted = list(dict.fromkeys(depends_on))
    if not wanted:
        return wanted
    await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
    if monitor_id in wanted:
        raise dependency_error(monitor_id, "itself")
    found = {
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM monitors WHERE account_id = $1 AND id = ANY($2::bigint[])", account, wanted
        )
    }
    missing = [m for m in wanted if m not in found]
    if missing:
        raise dependency_error(missing[0], "missing")
    if monitor_id is not None:
        closure = {r["id"] for r in await conn.fetch(DEPENDENCY_CLOSURE, account, wanted)}
        if monitor_id in closure:
            raise dependency_error(monitor_id, "cycle")
    return wanted


def dependency_error(monitor_id: int, why: str) -> DomainError:
    """The 422 of a ``depends_on`` that breaks a rule: on ``itself``, a ``missing`` monitor, a
    ``cycle`` (``check_dependencies``; ``monitor_bulk.set_dependencies`` judges many at once)."""
    message = {
        "itself": "a monitor cannot depend on itself",
        "missing": f"no monitor {monitor_id}",
        "cycle": f"a cycle: monitor {monitor_id} would depend on itself through these",
    }[why]
    return DomainError(422, "invalid", f"depends_on: {message}", "depends_on")


def reaches(graph: dict[int, list[int]], start: list[int], target: int) -> bool:
    """Whether ``target`` is among ``start`` or the monitors they depend on, directly or through
    others, in ``graph`` (id -> depends_on): ``DEPENDENCY_CLOSURE`` on a graph in memory."""
    seen, todo = set(start), list(start)
    while todo:
        for next_id in graph.get(todo.pop(), ()):
            if next_id not in seen:
                seen.add(next_id)
                todo.append(next_id)
    return target in seen


async def set_channels(
    conn: asyncpg.Connection, account: int, monitor_id: int, channel_ids: list[int] | None, chat: Any
) -> None:
    """Attach ``channel_ids`` (all of the caller's account) and/or the channel of a Telegram chat.

    ``telegram_chat_id`` is the first issue's shortcut: it attaches the account's channel
    for that chat, made on first use; ``null`` detaches the monitor's Telegram channels.
    """
    wanted: list[int] | None = None
    if channel_ids is not None:
        found = await conn.fetch(
            "SELECT id FROM channels WHERE account_id = $1 AND id = ANY($2::bigint[])", account, channel_ids
        )
        missing = sorted(set(channel_ids) - {r["id"] for r in found})
        if missing:
            raise DomainError(422, "invalid", f"channel_ids: no channel {missing[0]}", "channel_ids")
        wanted = list(dict.fromkeys(channel_ids))
    if chat is not UNSET:
        if wanted is None:
            wanted = [
                r["channel_id"]
                for r in await conn.fetch(
                    """SELECT mc.channel_id FROM monitor_channels mc JOIN channels c ON c.id = mc.channel_id
                       WHERE mc.monitor_id = $1 AND c.kind <> 'telegram'""",
                    monitor_id,
                )
            ]
        if chat is not None:
            channel = await conn.fetchval(
                """SELECT id FROM channels WHERE account_id = $1 AND kind = 'telegram'
                   AND config ->> 'chat_id' = $2 ORDER BY id LIMIT 1""",
                account,
                chat,
            )
            if channel is None:
                channel = await conn.fetchval(
                    """INSERT INTO channels (account_id, kind, name, config)
                       VALUES ($1, 'telegram', $2, $3) RETURNING id""",
                    account,
                    f"Telegram {chat}",
                    {"chat_id": chat},
                )
            if channel not in wanted:
                wanted.append(channel)
    if wanted is None:
        return
    await conn.execute("DELETE FROM monitor_channels WHERE monitor_id = $1", monitor_id)
    await conn.executemany(
        "INSERT INTO monitor_channels (monitor_id, channel_id) VALUES ($1, $2)",
        [(monitor_id, c) for c in wanted],
    )
