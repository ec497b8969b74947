"""Many monitors at once: pause, resume or delete a chosen set, all or nothing.

The same rules as one at a time (``monitors.update``'s pause and ``monitors.delete``, whose
work in a transaction this calls): the write role, each id the account's own (404 for any
other, and nothing is changed), an audit row per monitor. ``preview`` is what a confirmation
shows: the monitors the ids name, as the account sees them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.monitors import RESOURCE, SELECT, delete_in, render, set_paused_in
from monitor.domain.roles import authorize

ACTIONS = ("pause", "resume", "delete")
MAX_IDS = 1000


def _checked(action: str, ids: Sequence[int]) -> list[int]:
    if action not in ACTIONS:
        raise DomainError(400, "invalid", f"action: one of {', '.join(ACTIONS)}", "action")
    chosen = list(dict.fromkeys(ids))
    if not chosen:
        raise DomainError(400, "invalid", "id: choose at least one monitor", "id")
    if len(chosen) > MAX_IDS:
        raise DomainError(400, "invalid", f"id: at most {MAX_IDS} monitors at once", "id")
    if any(not 1 <= i <= 2**63 - 1 for i in chosen):
        raise DomainError(400, "invalid", "id: not a monitor id", "id")
    return chosen


async def preview(deps: Deps, actor: Actor, action: str, ids: Sequence[int]) -> list[dict[str, Any]]:
    """The monitors ``action`` would change, in the order given; 404 if one is not the account's."""
    authorize(actor, RESOURCE, "write")
    chosen = _checked(action, ids)
    rows = await deps.pool.fetch(
        SELECT + " WHERE m.id = ANY($1::bigint[]) AND m.account_id = $2", chosen, actor.account_id
    )
    found = {r["id"]: r for r in rows}
    if len(found) != len(chosen):
        raise DomainError(404, "not_found", "monitor not found (one of those chosen)", "id")
    return [render(found[i]) for i in chosen]


async def bulk(deps: Deps, actor: Actor, action: str, ids: Sequence[int]) -> int:
    """Apply ``action`` to every monitor of ``ids`` in one transaction; how many."""
    authorize(actor, RESOURCE, "write")
    chosen = _checked(action, ids)
    async with deps.pool.acquire() as conn, conn.transaction():
        for monitor_id in sorted(chosen):  # in id order: two bulk changes at once cannot deadlock
            if action == "delete":
                await delete_in(conn, actor, monitor_id)
            else:
                await set_paused_in(conn, actor, monitor_id, action == "pause")
    return len(chosen)
