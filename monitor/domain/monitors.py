"""Monitors of an account: made, listed (filters, pages, uptime), read, changed and deleted.

A monitor's body is validated by the model of its type (``domain/schemas/monitors.py``, made
for each check type from the common fields and the type's ``Settings``); the hosts it dials are
vetted when it is saved (``domain/targets.py``: 400 ``target_blocked``, nothing written) and its
secrets sealed (``monitor/secrets.py``). A change may carry the ETag it read (``If-Match``: 412
if the monitor changed meanwhile). An account holds at most ``account_monitor_quota`` monitors
(409), counted with the account's row locked so two creations at once cannot both slip under.
``create_many`` makes many by the same rules in one transaction (``monitor_inserts.py``, which
``create`` writes with too).
Every write moves ``updated_at``, and the trigger on ``monitors`` NOTIFYs the schedulers, which
reload the monitor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

import asyncpg
from pydantic import ValidationError

from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.checks.heartbeat import new_token
from monitor.domain import audit
from monitor.domain import monitor_inserts as inserts
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, from_validation, not_found
from monitor.domain.locations import drop_removed, location_status
from monitor.domain.maintenance import monitor_windows
from monitor.domain.monitor_inserts import New
from monitor.domain.monitor_links import UNSET, check_dependencies, set_channels
from monitor.domain.monitor_types import (
    changed_settings,
    store_secrets,
    type_fields,
    unmasked,
    validation_context,
    vet_hosts,
    whole,
)
from monitor.domain.roles import authorize
from monitor.domain.schemas.locations import patch_problem
from monitor.domain.schemas.monitors import PATCH_BODIES, MonitorCreate, check_timeout, validate_create
from monitor.domain.status_pages import BADGE_PATH
from monitor.domain.versions import etag, if_match
from monitor.secrets import SECRET_VIEW
from monitor.times import rfc3339_or_none as rfc3339

RESOURCE = "monitors"
WHAT = "monitor"
COLUMNS = (
    "name",
    "type",
    "url",
    "interval_seconds",
    "timeout_seconds",
    "confirm_after",
    "recover_after",
    "remind_every_minutes",
    "remind_max",
    "degraded_above_ms",
    "cert_warn_days",
    "depends_on",
    "flap_threshold",
    "flap_window_minutes",
    "paused",
    "tags",
    "locations",
    "quorum",
)
SELECT = f"""
SELECT m.*, s.status, s.last_check_at, s.last_ok, s.last_error, s.last_status_code,
       s.last_latency_ms, s.changed_at, {SECRET_VIEW},
       coalesce((SELECT array_agg(mc.channel_id ORDER BY mc.channel_id) FROM monitor_channels mc
                 WHERE mc.monitor_id = m.id), '{{}}') AS channel_ids,
       (SELECT c.config ->> 'chat_id' FROM monitor_channels mc JOIN channels c ON c.id = mc.channel_id
        WHERE mc.monitor_id = m.id AND c.kind = 'telegram' ORDER BY c.id LIMIT 1) AS telegram_chat_id
FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
"""
STATUSES = ("up", "degraded", "down", "paused", "unknown")
# What a listing may add to each monitor (``include=``): its uptime over these windows.
UPTIME_INCLUDES = {
    "uptime_24h": timedelta(hours=24),
    "uptime_7d": timedelta(days=7),
    "uptime_30d": timedelta(days=30),
    "uptime_90d": timedelta(days=90),
}


class Versioned(NamedTuple):
    """A monitor as an answer about one monitor shows it, and its ETag (``versions.etag``)."""

    monitor: dict[str, Any]
    etag: str


def render(row: Mapping[str, Any], base: str = "") -> dict[str, Any]:
    """The monitor as every face shows it: the common fields, then its type's own (``url``, the
    fields of its ``Settings`` as the type shows them, and a heartbeat's ping URL)."""
    status = "paused" if row["paused"] else (row["status"] or "unknown")
    last_check = None
    if row["last_check_at"] is not None:
        last_check = {
            "time": rfc3339(row["last_check_at"]),
            "ok": row["last_ok"],
            "status_code": row["last_status_code"],
            "latency_ms": row["last_latency_ms"],
            "error": row["last_error"],
        }
    return {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "interval_seconds": row["interval_seconds"],
        "timeout_seconds": row["timeout_seconds"],
        "confirm_after": row["confirm_after"],
        "recover_after": row["recover_after"],
        "remind_every_minutes": row["remind_every_minutes"],
        "remind_max": row["remind_max"],
        "degraded_above_ms": row["degraded_above_ms"],
        "cert_warn_days": row["cert_warn_days"],
        "depends_on": list(row["depends_on"]),
        "flap_threshold": row["flap_threshold"],
        "flap_window_minutes": row["flap_window_minutes"],
        **type_fields(row, base),
        "badge_url": f"{base}{BADGE_PATH}{row['badge_token']}",
        "telegram_chat_id": row["telegram_chat_id"],
        "channel_ids": list(row["channel_ids"]),
        "tags": list(row["tags"]),
        "locations": list(row["locations"]),
        "quorum": row["quorum"],
        "paused": row["paused"],
        "status": status,
        "status_since": rfc3339(row["changed_at"]),
        "last_check": last_check,
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
    }


async def _versioned(pool: asyncpg.Pool, row: asyncpg.Record, base: str) -> Versioned:
    """The monitor as the answers about one monitor show it: with the maintenance windows that
    apply to it (``domain/maintenance.py``) and, if it has locations, how each sees it; lists
    leave them out."""
    shown = {**render(row, base), "maintenance": await monitor_windows(pool, row)}
    if row["locations"]:
        shown["location_status"] = await location_status(pool, row["id"], row["locations"])
    return Versioned(shown, etag(row))


# -- operations -----------------------------------------------------------------------------------


class Prepared(NamedTuple):
    """A create body as it would be stored: validated, its hosts vetted, nothing written."""

    spec: Any  # the body as its type's model
    check: Check
    values: dict[str, Any]  # the ``monitors`` columns (COLUMNS, url, settings, legacy ones)
    secrets: dict[str, Any] | None  # plain, as ``Check.to_stored`` gives them


async def prepare(deps: Deps, body: Mapping[str, Any]) -> Prepared:
    """``body`` validated as :func:`create` takes it (422 naming the field) and its hosts vetted
    (400 ``target_blocked``): what ``create`` stores and a trial check runs (``trials.py``)."""
    try:
        spec: Any = validate_create(dict(body), validation_context(deps.settings))
    except ValidationError as exc:
        raise from_validation(exc, MonitorCreate) from None
    except ValueError as exc:
        raise DomainError(422, "invalid", str(exc), "type") from None
    check = CHECKS.get(spec.type)
    unmasked(check, spec.model_dump(include=set(check.Settings.model_fields), mode="json"), {})
    await vet_hosts(deps.resolver, check, spec)
    settings, secrets = check.to_stored(spec)
    values = spec.model_dump(include=set(COLUMNS))
    values["url"] = check.target(spec)
    values["settings"] = settings
    values.update(check.legacy_columns(settings))
    return Prepared(spec, check, values, secrets)


def _new(body: Mapping[str, Any], prepared: Prepared) -> New:
    spec, check, values, secrets = prepared
    if not check.scheduled:
        values = {**values, "ping_token": new_token()}
    chat = spec.telegram_chat_id if "telegram_chat_id" in spec.model_fields_set else UNSET
    return New(values, secrets, spec.paused, spec.channel_ids, chat, audit.fields_of(body))


async def create(deps: Deps, actor: Actor, body: Mapping[str, Any], *, base: str = "") -> Versioned:
    authorize(actor, RESOURCE, "write")
    new = [_new(body, await prepare(deps, body))]
    async with deps.pool.acquire() as conn, conn.transaction():
        problem = await inserts.first_problem(conn, deps, actor, new)
        if problem is not None:
            raise problem.error
        (new_id,) = await inserts.write(conn, deps, actor, new)
        row = await conn.fetchrow(SELECT + " WHERE m.id = $1", new_id)
    return await _versioned(deps.pool, row, base)


async def create_many(deps: Deps, actor: Actor, bodies: Sequence[Mapping[str, Any]]) -> list[int]:
    """:func:`create` of each of ``bodies``, all or none, in one transaction, by the same rules
    (``monitor_inserts.py``) and with its queries batched; the new ids in the bodies' order. A
    broken rule is the :class:`~monitor.domain.monitor_inserts.ItemError` of the first body
    that breaks one, as if they were created one after another: nothing is created."""
    authorize(actor, RESOURCE, "write")
    new: list[New] = []
    unprepared: inserts.ItemError | None = None
    for index, body in enumerate(bodies):
        try:
            new.append(_new(body, await prepare(deps, body)))
        except DomainError as exc:
            unprepared = inserts.ItemError(index, exc)
            break
    async with deps.pool.acquire() as conn, conn.transaction():
        problem = await inserts.first_problem(conn, deps, actor, new) or unprepared
        if problem is not None:
            raise problem
        return await inserts.write(conn, deps, actor, new)


async def get(deps: Deps, actor: Actor, monitor_id: int, *, base: str = "") -> Versioned:
    authorize(actor, RESOURCE, "read")
    return await _versioned(deps.pool, await owned(deps.pool, actor, monitor_id), base)


async def update(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    body: Mapping[str, Any],
    *,
    expected: Sequence[str] = (),
    base: str = "",
) -> Versioned:
    """The fields the body gives, validated by the model of the monitor's type; its type's
    settings validated whole (stored secrets kept where sent back masked). ``expected``: the
    ``If-Match`` fields the change is made under (412 unless one is the monitor's ETag)."""
    authorize(actor, RESOURCE, "write")
    account = actor.account_id
    before = await deps.pool.fetchrow(
        "SELECT id, type, url, settings FROM monitors WHERE id = $1 AND account_id = $2", monitor_id, account
    )
    if before is None:
        raise not_found(WHAT)
    model = PATCH_BODIES[before["type"]]
    try:
        patch: Any = model.model_validate(body, context=validation_context(deps.settings))
    except ValidationError as exc:
        raise from_validation(exc, model) from None
    check = CHECKS.get(before["type"])
    given = patch.model_fields_set & set(check.Settings.model_fields)
    vetted: tuple[str, ...] = ()
    if given:
        # The hosts of the fields given, vetted before the row is locked: a lookup may take seconds.
        stored, _ = await whole(deps.pool, deps.secret_box, check, before)
        changed = changed_settings(deps.settings, check, stored, patch)
        await vet_hosts(deps.resolver, check, changed, given)
        vetted = check.hosts(changed)
    values = patch.model_dump(include=set(COLUMNS) - given, exclude_unset=True)
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await owned(conn, actor, monitor_id)
        await conn.execute("SELECT 1 FROM monitors WHERE id = $1 FOR UPDATE", current["id"])
        current = await owned(conn, actor, monitor_id)
        if expected and not if_match(expected, etag(current)):
            raise DomainError(
                412, "precondition_failed", "the monitor changed since you read it (ETag differs)"
            )
        _check_timeout(values, current)
        problem = patch_problem(values, current)
        if problem is not None:
            raise DomainError(422, "invalid", f"quorum: {problem}", "quorum")
        if "depends_on" in values:
            values["depends_on"] = await check_dependencies(
                conn, account, current["id"], values["depends_on"]
            )
        if given:
            # One UPDATE of settings, whatever changed (secrets too): updated_at moves, and the
            # scheduler's NOTIFY trigger reloads the monitor.
            stored, secrets = await whole(conn, deps.secret_box, check, current)
            settings = changed_settings(deps.settings, check, stored, patch)
            if check.hosts(settings) != vetted:  # changed by another request meanwhile
                await vet_hosts(deps.resolver, check, settings, given)
            values["settings"], changed_secrets = check.to_stored(settings)
            values["url"] = check.target(settings)
            values.update(check.legacy_columns(values["settings"]))
            if changed_secrets != secrets:
                await store_secrets(conn, deps.secret_box, current["id"], changed_secrets)
        if values:
            assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(values, start=2))
            await conn.execute(
                f"UPDATE monitors SET {assignments}, updated_at = clock_timestamp() WHERE id = $1",
                current["id"],
                *values.values(),
            )
        elif patch.model_fields_set & {"channel_ids", "telegram_chat_id"}:
            await conn.execute(
                "UPDATE monitors SET updated_at = clock_timestamp() WHERE id = $1", current["id"]
            )
        if "locations" in values:
            await drop_removed(conn, current["id"], values["locations"])
        if "paused" in values and values["paused"] != current["paused"]:
            await _pause(conn, current["id"], values["paused"])
        chat = patch.telegram_chat_id if "telegram_chat_id" in patch.model_fields_set else UNSET
        await set_channels(conn, account, current["id"], patch.channel_ids, chat)
        await audit.record(conn, actor, RESOURCE, "update", current["id"], audit.fields_of(body))
        row = await owned(conn, actor, monitor_id)
    return await _versioned(deps.pool, row, base)


async def delete(deps: Deps, actor: Actor, monitor_id: int) -> None:
    """The monitor goes (its checks, state and links cascade), and its dependants depend on it
    no more."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        await delete_in(conn, actor, monitor_id)


async def delete_in(conn: asyncpg.Connection, actor: Actor, monitor_id: int) -> None:
    """``delete``'s work in the caller's transaction (the caller has authorised the actor)."""
    deleted = await conn.fetchval(
        "DELETE FROM monitors WHERE id = $1 AND account_id = $2 RETURNING id", monitor_id, actor.account_id
    )
    if deleted is None:
        raise not_found(WHAT)
    await audit.record(conn, actor, RESOURCE, "delete", deleted)
    # Its dependants depend on it no more (their scheduler reloads them: updated_at moves).
    await conn.execute(
        """UPDATE monitors SET depends_on = array_remove(depends_on, $1), updated_at = clock_timestamp()
           WHERE $1 = ANY(depends_on)""",
        deleted,
    )


async def set_paused_in(conn: asyncpg.Connection, actor: Actor, monitor_id: int, paused: bool) -> None:
    """An ``update`` of ``paused`` alone, in the caller's transaction (the caller has authorised
    the actor): the row locked, the pause begun or ended, audited as that update is."""
    current = await conn.fetchrow(
        "SELECT id, paused FROM monitors WHERE id = $1 AND account_id = $2 FOR UPDATE",
        monitor_id,
        actor.account_id,
    )
    if current is None:
        raise not_found(WHAT)
    if current["paused"] != paused:
        await conn.execute(
            "UPDATE monitors SET paused = $2, updated_at = clock_timestamp() WHERE id = $1",
            monitor_id,
            paused,
        )
        await _pause(conn, monitor_id, paused)
    await audit.record(conn, actor, RESOURCE, "update", monitor_id, ["paused"])


# -- what the operations check and store ----------------------------------------------------------


async def owned(conn: asyncpg.Connection | asyncpg.Pool, actor: Actor, monitor_id: int) -> asyncpg.Record:
    """The monitor, if the caller's account owns it; 404 otherwise (same as absent)."""
    row = await conn.fetchrow(SELECT + " WHERE m.id = $1 AND m.account_id = $2", monitor_id, actor.account_id)
    if row is None:
        raise not_found(WHAT)
    return row


def _check_timeout(values: dict[str, Any], current: Mapping[str, Any]) -> None:
    """A PATCH of one of timeout_seconds and interval_seconds, checked against the stored other
    (both given: the schema checked them)."""
    changed = {"timeout_seconds", "interval_seconds"} & set(values)
    if len(changed) != 1:
        return
    timeout = values.get("timeout_seconds", current["timeout_seconds"])
    interval = values.get("interval_seconds", current["interval_seconds"])
    try:
        check_timeout(timeout, interval, unchanged=({"timeout_seconds", "interval_seconds"} - changed).pop())
    except ValueError as exc:
        raise DomainError(422, "invalid", f"timeout_seconds: {exc}", "timeout_seconds") from None


async def _pause(conn: asyncpg.Connection, monitor_id: int, paused: bool) -> None:
    """A pause begins or ends (``monitor_pauses``: the uptime leaves paused time out)."""
    if paused:
        await conn.execute(
            """INSERT INTO monitor_pauses (monitor_id, started_at) VALUES ($1, now())
               ON CONFLICT DO NOTHING""",
            monitor_id,
        )
    else:
        await conn.execute(
            "UPDATE monitor_pauses SET ended_at = now() WHERE monitor_id = $1 AND ended_at IS NULL",
            monitor_id,
        )
