"""``/api/v1/monitors``: create, list (filters, pages, uptime), read, update, delete."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor import logging as mlog
from monitor.api.context import POOL, SECRET_BOX, SETTINGS
from monitor.api.errors import ApiError, from_validation, not_found
from monitor.api.guard import account_id
from monitor.api.monitor_types import (
    BADGE_PATH,
    changed_settings,
    public_base,
    type_fields,
    unmasked,
    validation_context,
    vet_hosts,
)
from monitor.api.params import (
    decode_cursor,
    if_match,
    int_param,
    json_object,
    next_page,
    path_id,
    rfc3339,
    window_param,
)
from monitor.checks import REGISTRY as CHECKS
from monitor.checks import Check
from monitor.checks.heartbeat import new_token
from monitor.domain.locations import drop_removed, location_status
from monitor.domain.maintenance import monitor_windows
from monitor.domain.schemas.locations import patch_problem
from monitor.domain.schemas.monitors import PATCH_BODIES, TAG, MonitorCreate, check_timeout, validate_create
from monitor.domain.uptime import uptimes
from monitor.secrets import SECRET_VIEW, SecretBox, open_monitor_secrets, seal_monitor_secrets

log = mlog.get(__name__)

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
UPTIME_INCLUDES = {f"uptime_{w}": w for w in ("24h", "7d", "30d", "90d")}
_UNSET: Any = object()


def etag(row: asyncpg.Record) -> str:
    return f'"{row["id"]}-{int(row["updated_at"].timestamp() * 1_000_000)}"'


def render(row: asyncpg.Record, base: str = "") -> dict[str, Any]:
    """The monitor as the API shows it: the common fields, then its type's own (``url``, the
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
    shown = {
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
    return shown


async def render_one(request: web.Request, row: asyncpg.Record) -> dict[str, Any]:
    """The monitor as the answers about one monitor show it: with the maintenance windows that
    apply to it (monitor/domain/maintenance.py) and, if it has locations, how each sees it; lists
    leave them out."""
    shown = {
        **render(row, public_base(request)),
        "maintenance": await monitor_windows(request.app[POOL], row),
    }
    if row["locations"]:
        shown["location_status"] = await location_status(request.app[POOL], row["id"], row["locations"])
    return shown


def _check_timeout(values: dict[str, Any], current: asyncpg.Record) -> None:
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
        raise ApiError(422, "invalid", f"timeout_seconds: {exc}", "timeout_seconds") from None


async def _store_secrets(
    conn: asyncpg.Connection, box: SecretBox, monitor_id: int, secrets: dict[str, Any] | None
) -> None:
    """The monitor's one row of secrets, sealed (monitor/secrets.py) and written, or (none left)
    deleted."""
    if secrets is None:
        await conn.execute("DELETE FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    else:
        await conn.execute(
            """INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)
               ON CONFLICT (monitor_id) DO UPDATE SET secrets = EXCLUDED.secrets""",
            monitor_id,
            seal_monitor_secrets(box, secrets),
        )


async def _whole(
    conn: asyncpg.Connection | asyncpg.Pool, request: web.Request, check: Check, row: asyncpg.Record
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(``Check.whole`` of a stored monitor, its secrets opened, or None): what a PATCH changes."""
    secrets = None
    if check.secrets:
        sealed = await conn.fetchval("SELECT secrets FROM monitor_secrets WHERE monitor_id = $1", row["id"])
        secrets = open_monitor_secrets(request.app[SECRET_BOX], sealed)
    return check.whole(row["url"], row["settings"], secrets), secrets


# The monitors ``$2`` (ids) depend on, directly or through others, within account ``$1``.
DEPENDENCY_CLOSURE = """
WITH RECURSIVE d(id) AS (
    SELECT unnest($2::bigint[])
    UNION SELECT unnest(m.depends_on) FROM monitors m JOIN d ON m.id = d.id WHERE m.account_id = $1
)
SELECT id FROM d"""


async def _check_dependencies(
    conn: asyncpg.Connection, account: int, monitor_id: int | None, depends_on: list[int]
) -> list[int]:
    """``depends_on`` as stored: the caller's monitors, not itself, no cycle (422 otherwise).
    The account's row is locked first, so two changes at once cannot close a cycle together."""
    wanted = list(dict.fromkeys(depends_on))
    if not wanted:
        return wanted
    await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
    if monitor_id in wanted:
        raise ApiError(422, "invalid", "depends_on: a monitor cannot depend on itself", "depends_on")
    found = {
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM monitors WHERE account_id = $1 AND id = ANY($2::bigint[])", account, wanted
        )
    }
    missing = [m for m in wanted if m not in found]
    if missing:
        raise ApiError(422, "invalid", f"depends_on: no monitor {missing[0]}", "depends_on")
    if monitor_id is not None:
        closure = {r["id"] for r in await conn.fetch(DEPENDENCY_CLOSURE, account, wanted)}
        if monitor_id in closure:
            raise ApiError(
                422,
                "invalid",
                f"depends_on: a cycle: monitor {monitor_id} would depend on itself through these",
                "depends_on",
            )
    return wanted


async def _set_channels(
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
            raise ApiError(422, "invalid", f"channel_ids: no channel {missing[0]}", "channel_ids")
        wanted = list(dict.fromkeys(channel_ids))
    if chat is not _UNSET:
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


async def create_monitor(request: web.Request) -> web.Response:
    account = account_id(request)
    body = await json_object(request)
    try:
        spec: Any = validate_create(body, validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc, MonitorCreate) from None
    except ValueError as exc:
        raise ApiError(422, "invalid", str(exc), "type") from None
    check = CHECKS.get(spec.type)
    unmasked(check, spec.model_dump(include=set(check.Settings.model_fields), mode="json"), {})
    await vet_hosts(request, check, spec)
    settings, secrets = check.to_stored(spec)
    values = spec.model_dump(include=set(COLUMNS))
    values["url"] = check.target(spec)
    if not check.scheduled:
        values["ping_token"] = new_token()
    values["settings"] = settings
    values.update(check.legacy_columns(settings))
    columns = ", ".join(values)
    placeholders = ", ".join(f"${i}" for i in range(2, len(values) + 2))
    quota = request.app[SETTINGS].account_monitor_quota
    async with request.app[POOL].acquire() as conn, conn.transaction():
        # Serialise creations of one account, so two at once cannot both slip under the quota.
        await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
        if await conn.fetchval("SELECT count(*) FROM monitors WHERE account_id = $1", account) >= quota:
            raise ApiError(409, "quota_exceeded", f"this account has its quota of {quota} monitors")
        values["depends_on"] = await _check_dependencies(conn, account, None, values["depends_on"])
        new_id = await conn.fetchval(
            f"INSERT INTO monitors (account_id, {columns}) VALUES ($1, {placeholders}) RETURNING id",
            account,
            *values.values(),
        )
        await conn.execute("INSERT INTO monitor_state (monitor_id) VALUES ($1)", new_id)
        if secrets is not None:
            await _store_secrets(conn, request.app[SECRET_BOX], new_id, secrets)
        if spec.paused:
            await conn.execute(
                "INSERT INTO monitor_pauses (monitor_id, started_at) VALUES ($1, now())", new_id
            )
        chat = spec.telegram_chat_id if "telegram_chat_id" in spec.model_fields_set else _UNSET
        await _set_channels(conn, account, new_id, spec.channel_ids, chat)
        row = await conn.fetchrow(SELECT + " WHERE m.id = $1", new_id)
    response = web.json_response(await render_one(request, row), status=201)
    response.headers["Location"] = f"/api/v1/monitors/{new_id}"
    response.headers["ETag"] = etag(row)
    return response


async def list_monitors(request: web.Request) -> web.Response:
    account = account_id(request)
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    status = request.query.get("status")
    if status is not None and status not in STATUSES:
        raise ApiError(400, "invalid", f"status: one of {', '.join(STATUSES)}", "status")
    tags = request.query.getall("tag", [])
    # Only a well-formed tag can match (and PostgreSQL refuses a NUL in a text parameter).
    bad = next((t for t in tags if not TAG.match(t)), None)
    if bad is not None:
        raise ApiError(400, "invalid", f"tag: {bad!r} is not a tag (letters, digits and _.:-)", "tag")
    includes = [i for part in request.query.getall("include", []) for i in part.split(",") if i]
    unknown = [i for i in includes if i not in UPTIME_INCLUDES]
    if unknown:
        raise ApiError(400, "invalid", f"include: unknown {unknown[0]!r} (uptime_24h|7d|30d|90d)", "include")
    rows = await request.app[POOL].fetch(
        SELECT
        + """ WHERE m.account_id = $1 AND m.id > $2
              AND ($3::text[] = '{}' OR m.tags @> $3::text[])
              AND ($4::text IS NULL
                   OR ($4 = 'paused' AND m.paused)
                   OR (NOT m.paused AND coalesce(s.status, 'unknown') = $4))
              ORDER BY m.id LIMIT $5""",
        account,
        cursor[0] if cursor else 0,
        tags,
        status,
        limit + 1,
    )
    page, next_cursor = next_page(rows, limit)
    items = [render(r, public_base(request)) for r in page]
    if includes and page:
        async with request.app[POOL].acquire() as conn:
            now = await conn.fetchval("SELECT now()")
            for include in dict.fromkeys(includes):
                start = now - window_param(UPTIME_INCLUDES[include])
                figures = await uptimes(conn, [(r["id"], r["created_at"]) for r in page], start, now, now)
                for item in items:
                    u = figures[item["id"]]
                    item[include] = {"uptime_percent": u.percent, "downtime_seconds": u.downtime_seconds,
                                     "degraded_seconds": u.degraded_seconds, "checks": u.checks}  # fmt: skip
    return web.json_response({"items": items, "next_cursor": next_cursor})


async def fetch_owned(conn: asyncpg.Connection | asyncpg.Pool, request: web.Request) -> asyncpg.Record:
    """The monitor of the path, if the caller's account owns it; 404 otherwise (same as absent)."""
    row = await conn.fetchrow(
        SELECT + " WHERE m.id = $1 AND m.account_id = $2", path_id(request), account_id(request)
    )
    if row is None:
        raise not_found("monitor")
    return row


async def get_monitor(request: web.Request) -> web.Response:
    row = await fetch_owned(request.app[POOL], request)
    return web.json_response(await render_one(request, row), headers={"ETag": etag(row)})


async def patch_monitor(request: web.Request) -> web.Response:
    account = account_id(request)
    body = await json_object(request)
    before = await request.app[POOL].fetchrow(
        "SELECT id, type, url, settings FROM monitors WHERE id = $1 AND account_id = $2",
        path_id(request),
        account,
    )
    if before is None:
        raise not_found("monitor")
    kind = before["type"]
    model = PATCH_BODIES[kind]
    try:
        patch: Any = model.model_validate(body, context=validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc, model) from None
    check = CHECKS.get(kind)
    given = patch.model_fields_set & set(check.Settings.model_fields)
    vetted: tuple[str, ...] = ()
    if given:
        # The hosts of the fields given, vetted before the row is locked: a lookup may take seconds.
        whole, _ = await _whole(request.app[POOL], request, check, before)
        changed = changed_settings(request, check, whole, patch)
        await vet_hosts(request, check, changed, given)
        vetted = check.hosts(changed)
    values = patch.model_dump(include=set(COLUMNS) - given, exclude_unset=True)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        current = await fetch_owned(conn, request)
        await conn.execute("SELECT 1 FROM monitors WHERE id = $1 FOR UPDATE", current["id"])
        current = await fetch_owned(conn, request)
        expected = request.headers.getall("If-Match", [])
        if expected and not if_match(expected, etag(current)):
            raise ApiError(412, "precondition_failed", "the monitor changed since you read it (ETag differs)")
        _check_timeout(values, current)
        problem = patch_problem(values, current)
        if problem is not None:
            raise ApiError(422, "invalid", f"quorum: {problem}", "quorum")
        if "depends_on" in values:
            values["depends_on"] = await _check_dependencies(
                conn, account, current["id"], values["depends_on"]
            )
        if given:
            # One UPDATE of settings, whatever changed (secrets too): updated_at moves, and the
            # scheduler's NOTIFY trigger reloads the monitor.
            whole, secrets = await _whole(conn, request, check, current)
            settings = changed_settings(request, check, whole, patch)
            if check.hosts(settings) != vetted:  # changed by another request meanwhile
                await vet_hosts(request, check, settings, given)
            values["settings"], changed_secrets = check.to_stored(settings)
            values["url"] = check.target(settings)
            values.update(check.legacy_columns(values["settings"]))
            if changed_secrets != secrets:
                await _store_secrets(conn, request.app[SECRET_BOX], current["id"], changed_secrets)
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
            if values["paused"]:
                await conn.execute(
                    """INSERT INTO monitor_pauses (monitor_id, started_at) VALUES ($1, now())
                       ON CONFLICT DO NOTHING""",
                    current["id"],
                )
            else:
                await conn.execute(
                    "UPDATE monitor_pauses SET ended_at = now() WHERE monitor_id = $1 AND ended_at IS NULL",
                    current["id"],
                )
        chat = patch.telegram_chat_id if "telegram_chat_id" in patch.model_fields_set else _UNSET
        await _set_channels(conn, account, current["id"], patch.channel_ids, chat)
        row = await fetch_owned(conn, request)
    return web.json_response(await render_one(request, row), headers={"ETag": etag(row)})


async def delete_monitor(request: web.Request) -> web.Response:
    async with request.app[POOL].acquire() as conn, conn.transaction():
        deleted = await conn.fetchval(
            "DELETE FROM monitors WHERE id = $1 AND account_id = $2 RETURNING id",
            path_id(request),
            account_id(request),
        )
        if deleted is None:
            raise not_found("monitor")
        # Its dependants depend on it no more (their scheduler reloads them: updated_at moves).
        await conn.execute(
            """UPDATE monitors SET depends_on = array_remove(depends_on, $1), updated_at = clock_timestamp()
               WHERE $1 = ANY(depends_on)""",
            deleted,
        )
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/monitors", create_monitor)
    router.add_get("/api/v1/monitors", list_monitors)
    router.add_get("/api/v1/monitors/{id}", get_monitor)
    router.add_patch("/api/v1/monitors/{id}", patch_monitor)
    router.add_delete("/api/v1/monitors/{id}", delete_monitor)
