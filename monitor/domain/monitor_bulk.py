"""Many monitors at once: pause, resume or delete a chosen set, all or nothing; and (``monitor
apply``, once the monitors it made exist) the dependencies of many set together.

The same rules as one at a time (``monitors.update``'s pause and ``monitors.delete``, whose
work in a transaction this calls): the write role, each id the account's own (404 for any
other, and nothing is changed), an audit row per monitor. ``preview`` is what a confirmation
shows: the monitors the ids name, as the account sees them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from monitor.domain import audit
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, from_validation, not_found
from monitor.domain.monitor_inserts import ItemError
from monitor.domain.monitor_links import dependency_error, reaches
from monitor.domain.monitor_types import validation_context
from monitor.domain.monitors import RESOURCE, SELECT, WHAT, delete_in, render, set_paused_in
from monitor.domain.roles import authorize
from monitor.domain.schemas.monitors import PATCH_BODIES

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


async def set_dependencies(deps: Deps, actor: Actor, wanted: Sequence[tuple[int, Sequence[int]]]) -> None:
    """``monitors.update`` of ``depends_on`` alone, for each (monitor id, ids) of ``wanted`` in
    turn, in one transaction and a few queries (one at a time, 500 were 6,000 round trips): the
    same rules (the account's monitor, the model's limits, its monitors, not itself, no cycle
    with the ones set before it), ``updated_at`` moved and an audit row each. The first broken
    rule is the ``ItemError`` of its item, and nothing is changed."""
    authorize(actor, RESOURCE, "write")
    account, context = actor.account_id, validation_context(deps.settings)
    async with deps.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
        rows = await conn.fetch("SELECT id, type, depends_on FROM monitors WHERE account_id = $1", account)
        types = {r["id"]: r["type"] for r in rows}
        graph = {r["id"]: list(r["depends_on"]) for r in rows}
        changed: list[tuple[int, list[int]]] = []
        for index, (monitor_id, ids) in enumerate(wanted):
            try:
                if monitor_id not in types:
                    raise not_found(WHAT)
                model = PATCH_BODIES[types[monitor_id]]
                try:
                    patch: Any = model.model_validate({"depends_on": list(ids)}, context=context)
                except ValidationError as exc:
                    raise from_validation(exc, model) from None
                stored = list(dict.fromkeys(patch.depends_on))
                if monitor_id in stored:
                    raise dependency_error(monitor_id, "itself")
                missing = [m for m in stored if m not in types]
                if missing:
                    raise dependency_error(missing[0], "missing")
                if reaches(graph, stored, monitor_id):
                    raise dependency_error(monitor_id, "cycle")
            except DomainError as exc:
                raise ItemError(index, exc) from None
            graph[monitor_id] = stored
            changed.append((monitor_id, stored))
        await conn.executemany(
            "UPDATE monitors SET depends_on = $2, updated_at = clock_timestamp() WHERE id = $1", changed
        )
        await audit.record_many(conn, actor, RESOURCE, "update", [(m, ["depends_on"]) for m, _ in changed])
