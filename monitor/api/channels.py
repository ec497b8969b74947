"""``/api/v1/channels``: alert channels of an account, and a test message through the alerter.

A channel's ``config`` is its kind's settings (``monitor.channels``). The fields the
kind names as secrets (webhook URLs that are credentials, signing secrets, passwords, keys)
are sealed with ``MONITOR_SECRET_KEY`` before they are stored and read back as ``********``;
a secret the API generates (a webhook's signing secret) is shown once, in the answer that
created it. Where a channel sends (a webhook's URL, an SMTP host: its kind's ``targets``) is
judged when it is made or changed, exactly as a monitor's target is (``monitor.domain.targets``):
400 ``target_blocked`` naming ``config.<field>``, nothing written.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from aiohttp import web
from pydantic import BaseModel, ValidationError

from monitor.api.context import POOL, RESOLVER, SECRET_BOX
from monitor.api.errors import ApiError, from_validation, not_found
from monitor.api.guard import account_id
from monitor.api.params import decode_cursor, int_param, json_object, next_page, path_id, rfc3339
from monitor.api.schemas import ChannelCreate, ChannelPatch
from monitor.api.schemas_http import MASK
from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.channels.base import ChannelKind, config_values, target_hosts
from monitor.domain.targets import vet_host
from monitor.events import SCHEMA_VERSION

SELECT = """
SELECT c.*, (SELECT count(*) FROM monitor_channels mc WHERE mc.channel_id = c.id) AS monitors
FROM channels c
"""


def render(row: asyncpg.Record, *, shown: dict[str, Any] | None = None) -> dict[str, Any]:
    """The channel as the API shows it: secrets masked, except those in ``shown`` (generated
    by this request, shown once)."""
    kind = CHANNEL_KINDS.get(row["kind"])
    secrets = kind.secrets if kind is not None else frozenset()
    config = {k: (MASK if k in secrets and v is not None else v) for k, v in row["config"].items()}
    config.update(shown or {})
    return {
        "id": row["id"],
        "kind": row["kind"],
        "name": row["name"],
        "config": config,
        "monitors": row["monitors"],
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
    }


async def _owned(conn: asyncpg.Connection | asyncpg.Pool, request: web.Request) -> asyncpg.Record:
    row = await conn.fetchrow(
        SELECT + " WHERE c.id = $1 AND c.account_id = $2",
        path_id(request, what="channel"),
        account_id(request),
    )
    if row is None:
        raise not_found("channel")
    return row


def _kind_error(exc: ValidationError) -> ApiError | None:
    first = exc.errors(include_url=False)[0]
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return ApiError(422, "invalid", f"kind: must be one of {', '.join(sorted(CHANNEL_KINDS))}", "kind")
    return None


async def create_channel(request: web.Request) -> web.Response:
    try:
        spec: Any = ChannelCreate.model_validate(await json_object(request)).root
    except ValidationError as exc:
        raise (_kind_error(exc) or from_validation(exc, ChannelCreate)) from None
    kind = CHANNEL_KINDS[spec.kind]
    await _vet(request, target_hosts(kind, spec.config))
    config, shown = _stored(request, kind, config_values(spec.config))
    async with request.app[POOL].acquire() as conn:
        new_id = await conn.fetchval(
            "INSERT INTO channels (account_id, kind, name, config) VALUES ($1, $2, $3, $4) RETURNING id",
            account_id(request),
            spec.kind,
            spec.name,
            config,
        )
        row = await conn.fetchrow(SELECT + " WHERE c.id = $1", new_id)
    return web.json_response(
        render(row, shown=shown), status=201, headers={"Location": f"/api/v1/channels/{new_id}"}
    )


async def list_channels(request: web.Request) -> web.Response:
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    rows = await request.app[POOL].fetch(
        SELECT + " WHERE c.account_id = $1 AND c.id > $2 ORDER BY c.id LIMIT $3",
        account_id(request),
        cursor[0] if cursor else 0,
        limit + 1,
    )
    page, next_cursor = next_page(rows, limit)
    return web.json_response({"items": [render(r) for r in page], "next_cursor": next_cursor})


async def get_channel(request: web.Request) -> web.Response:
    return web.json_response(render(await _owned(request.app[POOL], request)))


async def patch_channel(request: web.Request) -> web.Response:
    try:
        patch = ChannelPatch.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc, ChannelPatch) from None
    vetted: list[tuple[str, str]] | None = None
    if patch.config is not None:
        # Vetted before the transaction: a lookup may take seconds.
        kind, settings = _patched(request, await _owned(request.app[POOL], request), patch.config)
        vetted = target_hosts(kind, settings)
        await _vet(request, vetted)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        current = await _owned(conn, request)
        config: dict[str, Any] | None = None
        shown: dict[str, Any] = {}
        if patch.config is not None:
            kind, settings = _patched(request, current, patch.config)
            if target_hosts(kind, settings) != vetted:  # a kept secret URL changed meanwhile
                await _vet(request, target_hosts(kind, settings))
            config, shown = _stored(request, kind, config_values(settings))
        await conn.execute(
            """UPDATE channels SET name = coalesce($2, name), config = coalesce($3, config),
                                   updated_at = now()
               WHERE id = $1""",
            current["id"],
            patch.name,
            config,
        )
        row = await _owned(conn, request)
    return web.json_response(render(row, shown=shown))


def _stored(
    request: web.Request, kind: ChannelKind, given: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A validated config as stored (what the kind generates filled in, secrets sealed), and
    the secrets generated here, to be shown once in this answer."""
    config = kind.prepare(dict(given)) if kind.prepare is not None else given
    shown = {k: v for k, v in config.items() if k in kind.secrets and given.get(k) is None and v is not None}
    return request.app[SECRET_BOX].seal_fields(config, kind.secrets), shown


async def _vet(request: web.Request, targets: list[tuple[str, str]]) -> None:
    for name, host in targets:
        await vet_host(request.app[RESOLVER], host, f"config.{name}")


def _patched(
    request: web.Request, current: asyncpg.Record, given: dict[str, Any]
) -> tuple[ChannelKind, BaseModel]:
    """The new settings, validated against the channel's kind; a secret sent back masked
    (``********``) or left out keeps the stored one, and one the kind generates (a webhook's
    signing secret) sent as ``null`` is made anew (by ``_stored``) and shown once."""
    kind = CHANNEL_KINDS.get(current["kind"])
    if kind is None:
        raise ApiError(409, "conflict", f"this version cannot change channels of kind {current['kind']!r}")
    box = request.app[SECRET_BOX]
    stored = current["config"]
    merged = dict(given)
    for name in kind.secrets:
        # Sent back masked, or left out: the stored secret stays (a webhook's signing secret
        # must not change behind its receiver's back). ``null`` removes an optional one.
        if (merged.get(name) == MASK or name not in merged) and stored.get(name) is not None:
            merged[name] = box.open(stored[name])
    try:
        settings = kind.config.model_validate(merged)
    except ValidationError as exc:
        first = from_validation(exc, kind.config)
        field = f"config.{first.field}" if first.field else "config"
        raise ApiError(422, "invalid", f"config.{first}", field) from None
    return kind, settings


async def delete_channel(request: web.Request) -> web.Response:
    deleted = await request.app[POOL].fetchval(
        "DELETE FROM channels WHERE id = $1 AND account_id = $2 RETURNING id",
        path_id(request, what="channel"),
        account_id(request),
    )
    if deleted is None:
        raise not_found("channel")
    return web.Response(status=204)


async def test_channel(request: web.Request) -> web.Response:
    """Queue a test message on the same path as real alerts: outbox, relay, stream, alerter."""
    async with request.app[POOL].acquire() as conn:
        row = await _owned(conn, request)
        event_id = uuid.uuid4()
        now = await conn.fetchval("SELECT now()")
        event = {
            "v": SCHEMA_VERSION,
            "event_id": str(event_id),
            "kind": "test",
            "monitor_id": None,
            "monitor_name": row["name"],
            "monitor_url": None,
            "telegram_chat_id": None,
            "incident_id": 0,
            "at": rfc3339(now),
            "started_at": None,
            "ended_at": None,
            "duration_seconds": None,
            "cause": {},
            "channels": [{"id": row["id"], "kind": row["kind"], "name": row["name"], **row["config"]}],
        }
        await conn.execute(
            "INSERT INTO outbox (event_id, monitor_id, kind, payload) VALUES ($1, NULL, 'test', $2)",
            event_id,
            event,
        )
    return web.json_response({"event_id": str(event_id), "status": "queued"}, status=202)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/channels", create_channel)
    router.add_get("/api/v1/channels", list_channels)
    router.add_get("/api/v1/channels/{id}", get_channel)
    router.add_patch("/api/v1/channels/{id}", patch_channel)
    router.add_delete("/api/v1/channels/{id}", delete_channel)
    router.add_post("/api/v1/channels/{id}/test", test_channel)
