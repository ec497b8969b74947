"""Maintenance windows of an account: made, read, listed, changed and deleted; and the windows
of one monitor and of the account at a glance, which a monitor's read and ``/summary`` show.

A window's schedule is checked whole before it is stored (``monitor.maintenance``: a rule
that never occurs is refused), in a worker thread: the worst rule takes about half a second
to be found never to occur, and the event loop has other requests to answer. A window names
monitors of its own account (each id checked, 422 otherwise), or tags. Every change to
``maintenance_windows`` sends ``NOTIFY maintenance_changed`` (a trigger, sql/011), which
reloads the schedulers' calendars.

A window may carry a public text, which the status pages that show its monitors announce
``announce_hours`` before each occurrence and while it runs (``monitor.status.data``). What
serves the pages (``Published``) is told of every change: this process's visitors see it at
once, other api processes' within their cache period.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.domain import audit, paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.posts import Published
from monitor.domain.roles import authorize
from monitor.domain.schemas.maintenance import (
    MaintenanceCreate,
    MaintenancePatch,
    MaintenancePreview,
    OnceSchedule,
    RecurringSchedule,
    parse_local,
)
from monitor.maintenance import Rule, RuleError, Span, active_at, next_after, to_local, zone
from monitor.times import rfc3339, rfc3339_or_none

log = mlog.get(__name__)

RESOURCE = "maintenance"
WHAT = "maintenance window"
# The schedule's columns, all of them written whenever the schedule changes.
SCHEDULE = ("kind", "starts_at", "ends_at", "rrule", "cron", "dtstart", "timezone", "duration_seconds")
ACTIVE_LISTED = 100
UPCOMING_LISTED = 20
# A RuleError's field, as the request named it.
_ONCE_FIELDS = {"starts_at": "once.from", "ends_at": "once.to"}
_RECURRING_FIELDS = {name: f"recurring.{name}" for name in ("rrule", "cron", "timezone", "starts_at")} | {
    "duration_seconds": "recurring.duration_minutes"
}


# -- what a window looks like ---------------------------------------------------------------------


def rule_of(row: Mapping[str, Any]) -> Rule | None:
    """The row's rule; None (logged) for one this version cannot read."""
    try:
        return Rule.from_row(row)
    except ValueError as exc:
        log.warning("maintenance.bad_rule", window_id=row["id"], error=str(exc))
        return None


def _span(span: Span | None) -> dict[str, Any] | None:
    return None if span is None else {"from": rfc3339(span[0]), "to": rfc3339(span[1])}


def timing(rule: Rule | None, now: datetime) -> dict[str, Any]:
    """``active_now``, ``current`` (the span open now) and ``next`` (the next to open)."""
    current = active_at(rule, now) if rule is not None else None
    upcoming = next_after(rule, now) if rule is not None else None
    return {"active_now": current is not None, "current": _span(current), "next": _span(upcoming)}


def _shown_schedule(row: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(once, recurring) of a window's row (or of ``prepare``'s columns), as answers show them."""
    if row["kind"] == "once":
        return {"from": rfc3339(row["starts_at"]), "to": rfc3339(row["ends_at"])}, None
    return None, {
        "rrule": row["rrule"],
        "cron": row["cron"],
        "duration_minutes": row["duration_seconds"] // 60,
        "timezone": row["timezone"],
        "starts_at": row["dtstart"].isoformat(timespec="seconds"),
    }


def render(row: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A window as every face shows it (``MaintenanceWindow``), open or not at ``now``."""
    rule = rule_of(row)
    once, recurring = _shown_schedule(row)
    return {
        "id": row["id"],
        "name": row["name"],
        "kind": row["kind"],
        "once": once,
        "recurring": recurring,
        "monitor_ids": list(row["monitor_ids"]),
        "tags": list(row["tags"]),
        "notify": row["notify"],
        "public_text": row["public_text"],
        "announce_hours": row["announce_hours"],
        **timing(rule, now),
        "created_at": rfc3339_or_none(row["created_at"]),
        "updated_at": rfc3339_or_none(row["updated_at"]),
    }


# -- operations -----------------------------------------------------------------------------------


async def prepare(body: Mapping[str, Any]) -> tuple[MaintenanceCreate, dict[str, Any]]:
    """``body`` validated as :func:`create` takes it and its schedule's columns, checked whole
    (422 naming the field): nothing written. ``monitor apply`` judges a file with it."""
    spec = validated(MaintenanceCreate, body)
    return spec, await _schedule(spec.once, spec.recurring)


def as_body(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored window (or ``prepare``'s columns with its name, tags, notify and notice) as the body
    that makes it: what ``monitor export`` writes and a plan compares."""
    once, recurring = _shown_schedule(row)
    body: dict[str, Any] = {"name": row["name"]}
    if once is not None:
        body["once"] = once
    else:
        body["recurring"] = {k: v for k, v in (recurring or {}).items() if v is not None}
    return body | {"monitor_ids": list(row.get("monitor_ids") or []), "tags": list(row["tags"]),
                   "notify": row["notify"], "public_text": row["public_text"],
                   "announce_hours": row["announce_hours"]}  # fmt: skip


async def create(
    deps: Deps, actor: Actor, body: Mapping[str, Any], *, published: Published | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "write")
    spec, values = await prepare(body)
    monitor_ids, tags = list(dict.fromkeys(spec.monitor_ids)), list(dict.fromkeys(spec.tags))
    async with deps.pool.acquire() as conn, conn.transaction():
        await _targets(conn, actor.account_id, monitor_ids, tags)
        values.update(
            name=spec.name, monitor_ids=monitor_ids, tags=tags, notify=spec.notify,
            public_text=spec.public_text, announce_hours=spec.announce_hours,
        )  # fmt: skip
        placeholders = ", ".join(f"${i}" for i in range(2, len(values) + 2))
        row = await conn.fetchrow(
            f"INSERT INTO maintenance_windows (account_id, {', '.join(values)}) VALUES ($1, {placeholders}) "
            "RETURNING *",
            actor.account_id,
            *values.values(),
        )
        await audit.record(conn, actor, RESOURCE, "create", row["id"], audit.fields_of(body))
        await _tell(conn, published, actor.account_id)
    return render(row, datetime.now(UTC))


async def get(deps: Deps, actor: Actor, window_id: int) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    return render(await _owned(deps.pool, actor, window_id), datetime.now(UTC))


async def listing(
    deps: Deps, actor: Actor, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    select, now = "SELECT * FROM maintenance_windows t", datetime.now(UTC)
    return await paging.account_listing(
        deps.pool, select, actor.account_id, limit, cursor, lambda row: render(row, now)
    )


async def update(
    deps: Deps,
    actor: Actor,
    window_id: int,
    body: Mapping[str, Any],
    *,
    published: Published | None = None,
) -> dict[str, Any]:
    """Only the fields given change; ``once`` or ``recurring`` replaces the whole schedule."""
    authorize(actor, RESOURCE, "write")
    patch = validated(MaintenancePatch, body)
    given = patch.model_fields_set
    if {"once", "recurring"} <= given:
        raise DomainError(422, "invalid", "once: give once or recurring, not both", "once")
    values: dict[str, Any] = {}
    if given & {"once", "recurring"}:
        values.update(await _schedule(patch.once, patch.recurring))
    for name in ("name", "notify", "public_text", "announce_hours"):
        if name in given:
            values[name] = getattr(patch, name)
    for name in ("monitor_ids", "tags"):
        if name in given:
            values[name] = list(dict.fromkeys(getattr(patch, name)))
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _owned(conn, actor, window_id, "FOR UPDATE")
        if given & {"monitor_ids", "tags"}:
            await _targets(
                conn,
                actor.account_id,
                values.get("monitor_ids", current["monitor_ids"]),
                values.get("tags", current["tags"]),
            )
        if values:
            assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(values, start=2))
            row = await conn.fetchrow(
                f"UPDATE maintenance_windows SET {assignments}, updated_at = clock_timestamp() "
                "WHERE id = $1 RETURNING *",
                current["id"],
                *values.values(),
            )
        else:
            row = current
        await audit.record(conn, actor, RESOURCE, "update", window_id, audit.fields_of(body))
        await _tell(conn, published, actor.account_id)
    return render(row, datetime.now(UTC))


async def delete(deps: Deps, actor: Actor, window_id: int, *, published: Published | None = None) -> None:
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        deleted = await conn.fetchval(
            "DELETE FROM maintenance_windows WHERE id = $1 AND account_id = $2 RETURNING id",
            window_id,
            actor.account_id,
        )
        if deleted is None:
            raise not_found(WHAT)
        await audit.record(conn, actor, RESOURCE, "delete", window_id)
        await _tell(conn, published, actor.account_id)


async def preview(actor: Actor, body: Mapping[str, Any], now: datetime | None = None) -> list[dict[str, Any]]:
    """The next spans (``count``, from ``now``: the one open now first) of the schedule in
    ``body`` (``MaintenancePreview``: its ``once`` or ``recurring``, as ``create`` takes them),
    checked as ``create`` checks it (the same 422s, naming the same fields); nothing is read or
    written, but it is for whoever may read the account's windows. Each span also on the clock
    of ``shown_in`` (a zone; default the rule's own: UTC for a one-off). For a form that shows
    what a window would cover before it is saved."""
    authorize(actor, RESOURCE, "read")
    spec = validated(MaintenancePreview, body)
    columns = await _schedule(spec.once, spec.recurring)
    rule = Rule.from_row(columns)
    tz, at = (zone(spec.shown_in) if spec.shown_in else rule.tz), now or datetime.now(UTC)
    found: list[dict[str, Any]] = []
    for start, end in rule.spans(at):
        if len(found) >= spec.count:
            break
        if end <= at:
            continue
        found.append({
            "from": rfc3339(start),
            "to": rfc3339(end),
            "local_from": to_local(start, tz).isoformat(timespec="minutes"),
            "local_to": to_local(end, tz).isoformat(timespec="minutes"),
            "timezone": str(tz.key),
        })  # fmt: skip
    return found


# -- what the operations check ------------------------------------------------------------------


async def _schedule(once: OnceSchedule | None, recurring: RecurringSchedule | None) -> dict[str, Any]:
    """The schedule's columns (all of SCHEDULE), from exactly one of ``once`` and ``recurring``,
    checked whole."""
    if (once is None) == (recurring is None):
        raise DomainError(
            422, "invalid", "once: give once (from, to) or recurring (a rule), one of the two", "once"
        )
    columns: dict[str, Any] = dict.fromkeys(SCHEDULE)
    if once is not None:
        _checked(lambda: Rule(once.from_, once.to), _ONCE_FIELDS)
        return columns | {"kind": "once", "starts_at": once.from_, "ends_at": once.to}
    if recurring is None or (recurring.rrule is None) == (recurring.cron is None):
        raise DomainError(
            422, "invalid", "recurring.rrule: give rrule or cron, one of the two", "recurring.rrule"
        )
    tz, seconds = recurring.timezone, recurring.duration_minutes * 60
    if recurring.starts_at is not None:
        starts_at = parse_local(recurring.starts_at)
    else:  # midnight today on the zone's clock: a rule's hours and minutes default to DTSTART's
        starts_at = to_local(datetime.now(UTC), zone(tz)).replace(hour=0, minute=0, second=0, microsecond=0)
    rule = _checked(
        lambda: Rule(
            starts_at, rrule=recurring.rrule, cron=recurring.cron, duration_seconds=seconds, timezone=tz
        ),
        _RECURRING_FIELDS,
    )
    try:
        await asyncio.to_thread(rule.check)
    except RuleError as exc:
        raise rule_error(exc, _RECURRING_FIELDS) from None
    return columns | {"kind": rule.kind, "rrule": rule.rrule, "cron": rule.cron, "dtstart": rule.starts_at,
                      "timezone": tz, "duration_seconds": seconds}  # fmt: skip


def _checked(make: Any, fields: Mapping[str, str]) -> Rule:
    try:
        rule: Rule = make()
    except RuleError as exc:
        raise rule_error(exc, fields) from None
    return rule


def rule_error(exc: RuleError, fields: Mapping[str, str]) -> DomainError:
    """A rule's error as a 422 naming the field of the body it is about (``fields``: the
    rule's names to the body's)."""
    field = fields.get(exc.field, exc.field)
    return DomainError(422, "invalid", f"{field}: {exc}", field)


async def _targets(
    conn: asyncpg.Connection, account: int, monitor_ids: Sequence[int], tags: Sequence[str]
) -> None:
    """A window applies to monitors of the caller's account, at least by a tag (422 otherwise)."""
    if not monitor_ids and not tags:
        raise DomainError(422, "invalid", "monitor_ids: give monitor_ids or tags (or both)", "monitor_ids")
    found = {
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM monitors WHERE account_id = $1 AND id = ANY($2::bigint[])",
            account,
            list(monitor_ids),
        )
    }
    missing = [m for m in monitor_ids if m not in found]
    if missing:
        raise DomainError(422, "invalid", f"monitor_ids: no monitor {missing[0]}", "monitor_ids")


async def _tell(conn: asyncpg.Connection, published: Published | None, account: int) -> None:
    """The account's pages built afresh on their next request: a window's monitors may be on
    any of them (by id or tag), and its name, span or text on the page may have changed."""
    if published is not None:
        slugs = await conn.fetch("SELECT slug FROM status_pages WHERE account_id = $1", account)
        published.forget(*(r["slug"] for r in slugs))


async def _owned(
    conn: asyncpg.Connection | asyncpg.Pool, actor: Actor, window_id: int, lock: str = ""
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"SELECT * FROM maintenance_windows WHERE id = $1 AND account_id = $2 {lock}",
        window_id,
        actor.account_id,
    )
    if row is None:
        raise not_found(WHAT)
    return row


# -- for a monitor's read and /summary ------------------------------------------------------------


async def monitor_windows(
    conn: asyncpg.Connection | asyncpg.Pool, monitor: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The windows that apply to ``monitor`` (a ``monitors`` row: id, account_id, tags), by id
    or by any of its tags, with whether each is open now and its current and next spans. A read
    for the operation that shows the monitor, which has authorised its caller."""
    rows = await conn.fetch(
        """SELECT * FROM maintenance_windows
           WHERE account_id = $1 AND (monitor_ids @> ARRAY[$2::bigint] OR tags && $3::text[])
           ORDER BY id""",
        monitor["account_id"],
        monitor["id"],
        list(monitor["tags"]),
    )
    now = datetime.now(UTC)
    return [{"id": r["id"], "name": r["name"], **timing(rule_of(r), now)} for r in rows]


async def account_windows(
    conn: asyncpg.Connection | asyncpg.Pool, account: int
) -> dict[str, list[dict[str, Any]]]:
    """``/summary``'s part: the windows open now (closing first first, at most ACTIVE_LISTED),
    and the next span of each window not open now (soonest first, at most UPCOMING_LISTED)."""
    rows = await conn.fetch("SELECT * FROM maintenance_windows WHERE account_id = $1 ORDER BY id", account)
    return glance(rows, datetime.now(UTC))


def glance(rows: Sequence[Mapping[str, Any]], now: datetime) -> dict[str, list[dict[str, Any]]]:
    """Of the windows ``rows``, those open at ``now`` and the next span of each of the others,
    as ``account_windows`` answers them (pure)."""
    active: list[tuple[Span, Mapping[str, Any]]] = []
    upcoming: list[tuple[Span, Mapping[str, Any]]] = []
    for row in rows:
        rule = rule_of(row)
        if rule is None:
            continue
        current = active_at(rule, now)
        if current is not None:
            active.append((current, row))
            continue
        later = next_after(rule, now)
        if later is not None:
            upcoming.append((later, row))

    def shown(found: list[tuple[Span, Mapping[str, Any]]], key: int, limit: int) -> list[dict[str, Any]]:
        found.sort(key=lambda item: (item[0][key], item[1]["id"]))
        return [
            {
                "id": r["id"],
                "name": r["name"],
                "from": rfc3339(s),
                "to": rfc3339(e),
                "monitor_ids": list(r["monitor_ids"]),
                "tags": list(r["tags"]),
            }
            for (s, e), r in found[:limit]
        ]

    return {"active": shown(active, 1, ACTIVE_LISTED), "upcoming": shown(upcoming, 0, UPCOMING_LISTED)}
