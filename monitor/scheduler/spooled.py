"""What the spool's records say (spool.py writes them, replay.py reads them back): pure.

Each record is a msgpack array whose first item is its kind:

  ["L", epoch, lease_end]       the member's epoch and the end of its lease (epoch seconds),
                                at each join and renewal: a replay fences what follows by it
  ["R", row]                    a staged row: the check's columns, then the monitor's state
                                after it (writer.STAGE_COLUMNS)
  ["T", [id, name, url], changes, alerts, check, event_ids, located]
                                a confirmed change: [kind, at, reason] each, alerts as
                                [kind, at, details], the check's record, one event id per alert
                                (16 bytes), and, checked from several locations, [location,
                                changes, primary, cause, reason]
  ["N", kind, at, details, duration_seconds, event_id]
                                an alert for the operator
  ["P", ids]                    pings whose results are in the rows before
  ["X", row]                    a location's confirmed state (writer.LOCATION_COLUMNS)
  ["W", offset]                 a flush wrote everything before this offset of the segment:
                                a replay skips it (spool.read), but the leases

Event ids travel with the changes, so an alert written before the kill and replayed after it
is the same event, which the outbox writes once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from monitor.models import CheckResult
from monitor.scheduler.quorum import Located, Seen
from monitor.scheduler.state import UNKNOWN, Alert, Change, Outcome
from monitor.scheduler.transitions import Notice, Pending


@dataclass(frozen=True)
class Spooled:
    """A monitor as a spooled change names it (``events.Subject``)."""

    id: int
    name: str
    url: str


def _changes(changes: tuple[Change, ...]) -> list[tuple[str, datetime, str | None]]:
    return [(c.kind, c.at, c.reason) for c in changes]


def _read_changes(items: list[list[Any]]) -> tuple[Change, ...]:
    return tuple(Change(kind, at, reason) for kind, at, reason in items)


def pending_record(pending: Pending) -> tuple[Any, ...]:
    spec, outcome, located = pending.spec, pending.outcome, pending.located
    where = None
    if located is not None:
        where = (
            located.location,
            _changes(located.changes),
            located.primary,
            located.cause,
            located.seen.reason,
        )
    return (
        "T",
        (spec.id, spec.name, spec.url),
        _changes(outcome.changes),
        [(a.kind, a.at, a.details) for a in outcome.alerts],
        pending.result.record(),
        [e.bytes for e in pending.event_ids],
        where,
    )


def read_pending(record: list[Any]) -> Pending:
    _, (monitor_id, name, url), changes, alerts, check, event_ids, where = record
    located = None
    if where is not None:
        location, located_changes, primary, cause, reason = where
        located = Located(
            location, UNKNOWN, Seen(reason=reason), _read_changes(located_changes), primary, cause
        )
    return Pending(
        Spooled(monitor_id, name, url),
        Outcome(_read_changes(changes), tuple(Alert(kind, at, details) for kind, at, details in alerts)),
        CheckResult.from_record(check),
        event_ids=[uuid.UUID(bytes=e) for e in event_ids],
        located=located,
    )


def notice_record(notice: Notice) -> tuple[Any, ...]:
    return ("N", notice.kind, notice.at, notice.details, notice.duration_seconds, notice.event_id.bytes)


def read_notice(record: list[Any]) -> Notice:
    _, kind, at, details, duration, event_id = record
    return Notice(kind, at, details, duration, uuid.UUID(bytes=event_id))


@dataclass
class Run:
    """What one epoch of a member spooled, in order: written through a writer fenced by it."""

    epoch: int | None
    lease_end: float = 0.0
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    transitions: list[Pending | Notice] = field(default_factory=list)
    pings: list[int] = field(default_factory=list)
    located: list[tuple[Any, ...]] = field(default_factory=list)


def runs(records: list[list[Any]]) -> list[Run]:
    """The records cut into runs, one per epoch (a member that lost its lease joined again with
    a new one); the lease end of each is the latest its records tell."""
    found: list[Run] = [Run(None)]
    for record in records:
        kind = record[0]
        run = found[-1]
        if kind == "L":
            epoch, lease_end = record[1], record[2]
            if epoch != run.epoch:
                run = Run(epoch)
                found.append(run)
            run.lease_end = max(run.lease_end, lease_end)
        elif kind == "R":
            run.rows.append(tuple(record[1]))
        elif kind == "T":
            run.transitions.append(read_pending(record))
        elif kind == "N":
            run.transitions.append(read_notice(record))
        elif kind == "P":
            run.pings.extend(record[1])
        elif kind == "X":
            run.located.append(tuple(record[1]))
    return [r for r in found if r.rows or r.transitions or r.pings or r.located]
