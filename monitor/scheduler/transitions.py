"""What a confirmed change writes, in the transaction of the batch that holds its check: the
monitor's incidents and degradations, a location's outages (per-location uptime), and the
alerts in the outbox, each with the monitor's next place in its sequence.

Every step can run again after a lost commit without doubling anything: an opening is
skipped when one that started then exists, a closing closes only what started before it, and
an alert is written once per event id (made once per alert, :class:`Pending`). An alert that
is no news is not written at all: a down already told for an open incident (a state lost and
rebuilt, a role moved between schedulers), an up or a reminder without a told down, a reminder
of an incident someone acknowledged (``domain/incidents.py``: the state machine keeps counting
its reminders, none is said; the next incident is a new row, not acknowledged).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import asyncpg

from monitor import channels as channel_registry
from monitor.events import Event, Subject
from monitor.models import CheckResult
from monitor.scheduler.quorum import Located
from monitor.scheduler.state import Alert, Change, Outcome


@dataclass
class Pending:
    """A check's changes and alerts waiting to be written with its check rows; one event id per
    alert, made once, so a batch written again after a lost commit writes no alert twice."""

    spec: Subject  # a MonitorSpec; read back from a spool, its id, name and URL only
    outcome: Outcome
    result: CheckResult
    event_ids: list[uuid.UUID] = field(default_factory=list)
    # A check from one of several locations: that location's changes (its own incidents).
    located: Located | None = None
    # A window's edge, not a check (edges.py): ``result`` only holds the instant; the alerts'
    # cause is the monitor's latest stored check.
    edge: bool = False

    def __post_init__(self) -> None:
        if not self.event_ids:
            self.event_ids = [uuid.uuid4() for _ in self.outcome.alerts]


@dataclass
class Notice:
    """An alert for the operator, about the checker rather than a monitor (it was cut off)."""

    kind: str
    at: datetime
    details: dict[str, Any]
    duration_seconds: float | None = None
    event_id: uuid.UUID = field(default_factory=uuid.uuid4)


async def apply(conn: asyncpg.Connection, pending: Pending) -> None:
    """Record the check's changes and write its alerts (in the batch's transaction)."""
    spec = pending.spec
    if not await conn.fetchval("SELECT 1 FROM monitors WHERE id = $1", spec.id):
        return  # deleted while the check ran: nothing to record, nobody to alert
    if pending.edge:
        pending = replace(pending, result=await _latest(conn, pending.result))
    for change in pending.outcome.changes:
        await _record_change(conn, spec.id, change, pending.result)
    if pending.located is not None:
        for change in pending.located.changes:
            await _record_location_change(conn, spec.id, pending.located, change)
    for alert, event_id in zip(pending.outcome.alerts, pending.event_ids, strict=True):
        await _write_alert(conn, pending, alert, event_id)


async def _latest(conn: asyncpg.Connection, edge: CheckResult) -> CheckResult:
    """The monitor's latest stored check as a result (what an edge's alerts give as their cause:
    a held down says what the check saw), at the edge's instant."""
    row = await conn.fetchrow(
        """SELECT last_ok, last_status_code, last_error, last_latency_ms FROM monitor_state
           WHERE monitor_id = $1""",
        edge.monitor_id,
    )
    if row is None or row["last_ok"] is None:
        return edge
    return replace(
        edge,
        ok=row["last_ok"],
        status_code=row["last_status_code"],
        error=row["last_error"],
        latency_ms=row["last_latency_ms"],
    )


OPEN_INCIDENT = """
INSERT INTO incidents (monitor_id, started_at, status_code, error)
SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM incidents WHERE monitor_id = $1 AND started_at = $2)
ON CONFLICT (monitor_id) WHERE ended_at IS NULL DO NOTHING"""
OPEN_DEGRADATION = """
INSERT INTO degradations (monitor_id, started_at, reason)
SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM degradations WHERE monitor_id = $1 AND started_at = $2)
ON CONFLICT (monitor_id) WHERE ended_at IS NULL DO NOTHING"""
CLOSE = """
UPDATE {table} SET ended_at = $2 WHERE monitor_id = $1 AND ended_at IS NULL AND started_at <= $2"""


async def _record_change(
    conn: asyncpg.Connection, monitor_id: int, change: Change, result: CheckResult
) -> None:
    """Open or close an incident or a degradation. Written again after a lost commit, it
    changes nothing: an opening is skipped when one that started then exists, and a closing
    closes only what started before it."""
    if change.kind == "down":
        await conn.execute(OPEN_INCIDENT, monitor_id, change.at, result.status_code, result.error)
    elif change.kind == "degraded":
        await conn.execute(OPEN_DEGRADATION, monitor_id, change.at, change.reason)
    else:
        table = "incidents" if change.kind == "up" else "degradations"
        await conn.execute(CLOSE.format(table=table), monitor_id, change.at)
    if change.kind in ("down", "up"):
        await conn.execute(
            "UPDATE monitor_state SET changed_at = $2 WHERE monitor_id = $1", monitor_id, change.at
        )


OPEN_LOCATION_INCIDENT = """
INSERT INTO location_incidents (monitor_id, location, started_at, error)
SELECT $1, $2, $3, $4 WHERE NOT EXISTS (
    SELECT 1 FROM location_incidents WHERE monitor_id = $1 AND location = $2 AND started_at = $3)
ON CONFLICT (monitor_id, location) WHERE ended_at IS NULL DO NOTHING"""
CLOSE_LOCATION_INCIDENT = """
UPDATE location_incidents SET ended_at = $3
WHERE monitor_id = $1 AND location = $2 AND ended_at IS NULL AND started_at <= $3"""


async def _record_location_change(
    conn: asyncpg.Connection, monitor_id: int, located: Located, change: Change
) -> None:
    """Open or close one location's outage of the monitor (per-location uptime), as
    :func:`_record_change` does the monitor's incidents; degradations are the monitor's only."""
    if change.kind == "down":
        await conn.execute(
            OPEN_LOCATION_INCIDENT, monitor_id, located.location, change.at, located.seen.reason
        )
    elif change.kind == "up":
        await conn.execute(CLOSE_LOCATION_INCIDENT, monitor_id, located.location, change.at)


# The last down or up told about a monitor, and its incident.
LAST_TOLD = """
SELECT o.event_id::text, o.kind, i.id AS incident_id, i.started_at, i.ended_at, i.acknowledged_at
FROM outbox o JOIN incidents i ON i.id = (o.payload ->> 'incident_id')::bigint
WHERE o.monitor_id = $1 AND o.kind IN ('down', 'up') ORDER BY o.seq DESC LIMIT 1"""

# When the monitor's latest incident ended (null while one is open).
LAST_INCIDENT_END = """
SELECT ended_at FROM incidents WHERE monitor_id = $1 ORDER BY started_at DESC LIMIT 1"""

# The monitors that depend on one, directly or through others (names, at most 50).
DEPENDANTS = """
WITH RECURSIVE d(id) AS (
    SELECT id FROM monitors WHERE $1 = ANY(depends_on)
    UNION SELECT m.id FROM monitors m JOIN d ON d.id = ANY(m.depends_on)
)
SELECT name FROM monitors WHERE id IN (SELECT id FROM d) AND id <> $1 ORDER BY name LIMIT 50"""


async def _write_alert(conn: asyncpg.Connection, pending: Pending, alert: Alert, event_id: uuid.UUID) -> None:
    # Idempotent: a batch retried after a lost commit must not alert twice.
    if await conn.fetchval("SELECT 1 FROM outbox WHERE event_id = $1", event_id):
        return
    spec, result = pending.spec, pending.result
    details = dict(alert.details)
    incident_id, started_at, ended_at = 0, None, None
    after_event_id: str | None = None
    if alert.kind in ("down", "up", "remind"):
        told = await conn.fetchrow(LAST_TOLD, spec.id)
        if alert.kind == "down":
            if told is not None and told["kind"] == "down" and told["ended_at"] is None:
                return  # already told (state lost and rebuilt): no second alert
            row = await conn.fetchrow(
                "SELECT id, started_at FROM incidents WHERE monitor_id = $1 AND ended_at IS NULL", spec.id
            )
            if row is None:
                return
            incident_id, started_at = row["id"], row["started_at"]
            covers = [r["name"] for r in await conn.fetch(DEPENDANTS, spec.id)]
            if covers:
                details["covers"] = covers
            # A browser check's screenshot page (visual/store.py): the alert links to it.
            shot = (result.details or {}).get("screenshot")
            if isinstance(shot, dict) and isinstance(shot.get("url"), str):
                details["screenshot"] = shot["url"]
        else:
            if told is None or told["kind"] != "down":
                return  # the down was never told: its end or reminders are no news
            if alert.kind == "remind" and told["acknowledged_at"] is not None:
                return  # someone is on it: no more reminders of this incident
            incident_id, started_at = told["incident_id"], told["started_at"]
            if alert.kind == "up":
                # An up said late (held back while flapping) recovered when the monitor's last
                # incident ended, not when it could be said.
                last_end = await conn.fetchval(LAST_INCIDENT_END, spec.id)
                ended_at = max(started_at, min(alert.at, last_end or alert.at))
                after_event_id = told["event_id"]
    elif alert.kind in ("degraded", "degraded_end"):
        row = await conn.fetchrow(
            """SELECT id, started_at, ended_at, reason FROM degradations WHERE monitor_id = $1
               ORDER BY started_at DESC LIMIT 1""",
            spec.id,
        )
        if row is not None:
            incident_id, started_at = row["id"], row["started_at"]
            ended_at = row["ended_at"] if alert.kind == "degraded_end" else None
            if alert.kind == "degraded" and not details.get("reason"):
                details["reason"] = row["reason"]
    channels = [
        channel_registry.carried(r)
        for r in await conn.fetch(
            """SELECT c.id, c.kind, c.name, c.config FROM monitor_channels mc
               JOIN channels c ON c.id = mc.channel_id WHERE mc.monitor_id = $1 ORDER BY c.id""",
            spec.id,
        )
    ]
    # The monitor's next place in its sequence: alerters deliver its events to each destination
    # in this order (outbox rows are never deleted, and the unique index refuses a second
    # writer that raced to the same number: its transaction is retried).
    seq = await conn.fetchval("SELECT coalesce(max(seq), 0) + 1 FROM outbox WHERE monitor_id = $1", spec.id)
    event = Event.build(
        event_id=event_id,
        kind=alert.kind,
        spec=spec,
        incident_id=incident_id,
        at=alert.at,
        started_at=started_at,
        ended_at=ended_at,
        result=result,
        channels=channels,
        after_event_id=after_event_id,
        seq=seq,
        details=details,
    )
    if alert.kind == "remind" and started_at is not None:  # how long it has been down so far
        event = replace(event, duration_seconds=(alert.at - started_at).total_seconds())
    await conn.execute(
        """INSERT INTO outbox (event_id, monitor_id, kind, payload, seq, destinations)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        event_id,
        spec.id,
        alert.kind,
        event.to_dict(),
        seq,
        list(event.targets(channel_registry.destination)),
    )
