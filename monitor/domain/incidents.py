"""An open incident acknowledged: someone is on it, so its reminders stop.

``acknowledge`` records who (the signed-in person, or the key and the person who made it) and
when, with an optional short note, on the incident; writes the audit row; and, in the same
transaction, an outbox row of kind ``acknowledged`` in the monitor's sequence, so the monitor's
channels get a short note ("Shop acknowledged by Ada: on it") through the alerts' own path
(relay, stream, alerter: order per monitor, retries, dead letters). An incident whose down was
never told (held in a maintenance window, or while flapping) is acknowledged without a message:
its channels never heard of it.

Reminders stop because the scheduler writes no ``remind`` for an acknowledged incident
(``scheduler/transitions.py`` reads ``acknowledged_at`` with the last told down, so no message to
the schedulers is needed and a restart or failover changes nothing); the recovery is still sent,
and the next outage is a new incident, not acknowledged. A reminder whose batch reads the
incident in the milliseconds before this transaction commits still goes out (the writer does
not lock the incident to remind of it). The writer's batch and this transaction both take the
monitor's next ``seq``: whichever comes second is refused by the unique index (or, rarely, picked
as a deadlock's victim) and tries again, the writer with its whole batch, this with itself.

Acknowledging is for editors and up (``roles.RULES``). Another
account's monitor or incident is a 404, an incident that has ended a 409 ``not_open``, one
acknowledged already a 409 ``already_acknowledged`` (the first acknowledgement stands: who
took it, and when, is not rewritten).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import asyncpg

from monitor import channels as channel_registry
from monitor.domain import audit
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.history import RESOURCE as HISTORY
from monitor.domain.history import render_incident
from monitor.domain.roles import authorize
from monitor.domain.schemas.incidents import IncidentAcknowledge
from monitor.events import Event
from monitor.times import rfc3339

RESOURCE = "incidents"
KIND = "acknowledged"
# A write that raced the scheduler's writer to the monitor's next place in its sequence (the
# unique index on (monitor_id, seq) refuses the second, or the database ends a deadlock between
# the two): tried again with the next one.
SEQ_ATTEMPTS = 5
MAX_NAME = 300

# Who acknowledges: the signed-in person, else the key's maker; their display name, else
# their e-mail.
WHO = """
SELECT coalesce(nullif(u.display_name, ''), u.email) AS name, u.id AS user_id
FROM users u WHERE u.id = coalesce($1::bigint, (SELECT created_by FROM api_keys WHERE id = $2::bigint))"""
# The down told about this incident (the acknowledgement follows it; none: never told).
TOLD_DOWN = """
SELECT event_id::text FROM outbox
WHERE monitor_id = $1 AND kind = 'down' AND (payload ->> 'incident_id')::bigint = $2
ORDER BY seq DESC LIMIT 1"""


async def get(deps: Deps, actor: Actor, monitor_id: int, incident_id: int) -> dict[str, Any]:
    """One incident of the caller's monitor."""
    authorize(actor, HISTORY, "read")
    async with deps.pool.acquire() as conn:
        row = await conn.fetchrow(
            """SELECT i.* FROM incidents i JOIN monitors m ON m.id = i.monitor_id
               WHERE i.id = $1 AND i.monitor_id = $2 AND m.account_id = $3""",
            incident_id,
            monitor_id,
            actor.account_id,
        )
        if row is None:
            raise not_found("incident")
        return render_incident(row, await conn.fetchval("SELECT now()"))


async def acknowledge(
    deps: Deps, actor: Actor, monitor_id: int, incident_id: int, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Acknowledge the open incident; the incident as it is now."""
    authorize(actor, RESOURCE, "acknowledge")
    spec = validated(IncidentAcknowledge, body)
    for attempt in range(1, SEQ_ATTEMPTS + 1):
        try:
            async with deps.pool.acquire() as conn, conn.transaction():
                return await _acknowledge(conn, actor, monitor_id, incident_id, spec, body)
        except (asyncpg.UniqueViolationError, asyncpg.DeadlockDetectedError) as exc:
            unique = isinstance(exc, asyncpg.UniqueViolationError)
            raced = not unique or exc.constraint_name == "outbox_monitor_seq"
            if not raced or attempt == SEQ_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def _acknowledge(
    conn: asyncpg.Connection,
    actor: Actor,
    monitor_id: int,
    incident_id: int,
    spec: IncidentAcknowledge,
    body: Mapping[str, Any],
) -> dict[str, Any]:
    monitor = await conn.fetchrow(
        "SELECT id, name, url FROM monitors WHERE id = $1 AND account_id = $2", monitor_id, actor.account_id
    )
    if monitor is None:
        raise not_found("monitor")
    # Locked: a second acknowledgement waits for this one, and so does the scheduler closing it.
    incident = await conn.fetchrow(
        "SELECT * FROM incidents WHERE id = $1 AND monitor_id = $2 FOR UPDATE", incident_id, monitor_id
    )
    if incident is None:
        raise not_found("incident")
    if incident["ended_at"] is not None:
        raise DomainError(409, "not_open", "the incident has ended; only an open one can be acknowledged")
    if incident["acknowledged_at"] is not None:
        raise DomainError(
            409, "already_acknowledged", f"already acknowledged by {incident['acknowledged_by_name']}"
        )
    who = await conn.fetchrow(WHO, actor.user_id, actor.key_id)
    name = _name(who["name"] if who else None, actor)
    now: datetime = await conn.fetchval("SELECT now()")
    row = await conn.fetchrow(
        """UPDATE incidents SET acknowledged_at = $2, acknowledged_by = $3, acknowledged_key_id = $4,
               acknowledged_by_name = $5, acknowledged_note = $6
           WHERE id = $1 RETURNING *""",
        incident_id,
        now,
        who["user_id"] if who else None,
        actor.key_id,
        name,
        spec.note,
    )
    await audit.record(conn, actor, RESOURCE, "acknowledge", incident_id, audit.fields_of(body))
    down_event = await conn.fetchval(TOLD_DOWN, monitor_id, incident_id)
    if down_event is not None:
        await _tell(conn, monitor, row, now, down_event)
    return render_incident(row, now)


def _name(person: str | None, actor: Actor) -> str:
    """Who acknowledged, as shown: a person's name, else the key's id, else the operator (the
    command line, which acts with neither)."""
    if person:
        return person[:MAX_NAME]
    if actor.key_id is not None:
        return f"API key #{actor.key_id}"
    return "the operator"


async def _tell(
    conn: asyncpg.Connection, monitor: asyncpg.Record, incident: asyncpg.Record, now: datetime, after: str
) -> None:
    """The acknowledgement as an outbox row in the monitor's sequence, for its channels now."""
    channels = [
        channel_registry.carried(r)
        for r in await conn.fetch(
            """SELECT c.id, c.kind, c.name, c.config FROM monitor_channels mc
               JOIN channels c ON c.id = mc.channel_id WHERE mc.monitor_id = $1 ORDER BY c.id""",
            monitor["id"],
        )
    ]
    seq = await conn.fetchval(
        "SELECT coalesce(max(seq), 0) + 1 FROM outbox WHERE monitor_id = $1", monitor["id"]
    )
    details: dict[str, Any] = {"acknowledged_by": incident["acknowledged_by_name"]}
    if incident["acknowledged_note"]:
        details["note"] = incident["acknowledged_note"]
    event = Event(
        event_id=str(uuid.uuid4()),
        kind=KIND,
        monitor_id=monitor["id"],
        monitor_name=monitor["name"],
        monitor_url=monitor["url"] or None,
        telegram_chat_id=None,
        incident_id=incident["id"],
        at=rfc3339(now),
        started_at=rfc3339(incident["started_at"]),
        ended_at=None,
        duration_seconds=max(0.0, (now - incident["started_at"]).total_seconds()),
        cause={},
        channels=channels,
        after_event_id=after,
        seq=seq,
        details=details,
    )
    await conn.execute(
        """INSERT INTO outbox (event_id, monitor_id, kind, payload, seq, destinations)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        uuid.UUID(event.event_id),
        monitor["id"],
        KIND,
        event.to_dict(),
        seq,
        list(event.targets(channel_registry.destination)),
    )
