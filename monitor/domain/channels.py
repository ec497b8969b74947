"""Alert channels of an account: made, read, listed, changed, deleted, and sent a test message
through the alerter.

A channel's ``config`` is its kind's settings (``monitor.channels``). The fields the kind names
as secrets (webhook URLs that are credentials, signing secrets, passwords, keys) are sealed with
``MONITOR_SECRET_KEY`` before they are stored and read back as ``********``; a secret the kind
generates (a webhook's signing secret) is shown once, in the answer that made it. Where a
channel sends (a webhook's URL, an SMTP host: its kind's ``targets``) is judged when it is made
or changed, exactly as a monitor's target is (``monitor.domain.targets``): 400
``target_blocked`` naming ``config.<field>``, nothing written. A test message takes the path of
real alerts (an outbox row of kind ``test``, the relay, the stream, the alerter).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg
from pydantic import BaseModel, ValidationError

from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.channels import carried
from monitor.channels.base import ChannelKind, config_values, target_hosts
from monitor.domain import audit, paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, from_validation, not_found, validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.channels import ChannelCreate, ChannelPatch
from monitor.domain.targets import vet_host
from monitor.events import SCHEMA_VERSION
from monitor.secrets import MASK, SecretBox
from monitor.times import rfc3339, rfc3339_or_none

RESOURCE = "channels"
WHAT = "channel"
SELECT = """
SELECT t.*, (SELECT count(*) FROM monitor_channels mc WHERE mc.channel_id = t.id) AS monitors
FROM channels t
"""


def render(row: Mapping[str, Any], *, shown: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The channel as every face shows it: secrets masked, except those in ``shown`` (generated
    by this change, shown once)."""
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
        "created_at": rfc3339_or_none(row["created_at"]),
        "updated_at": rfc3339_or_none(row["updated_at"]),
    }


# -- operations -----------------------------------------------------------------------------------


async def prepare(deps: Deps, body: Mapping[str, Any]) -> Any:
    """``body`` validated as :func:`create` takes it (422 naming the field) and where it sends
    vetted (400 ``target_blocked``): nothing written. ``monitor apply`` judges a file with it."""
    try:
        spec: Any = ChannelCreate.model_validate(body).root
    except ValidationError as exc:
        raise (kind_error(exc) or from_validation(exc, ChannelCreate)) from None
    await _vet(deps, target_hosts(CHANNEL_KINDS[spec.kind], spec.config))
    return spec


async def create(deps: Deps, actor: Actor, body: Mapping[str, Any]) -> dict[str, Any]:
    authorize(actor, RESOURCE, "write")
    spec = await prepare(deps, body)
    kind = CHANNEL_KINDS[spec.kind]
    config, shown = stored(deps.secret_box, kind, config_values(spec.config))
    async with deps.pool.acquire() as conn, conn.transaction():
        new_id = await conn.fetchval(
            "INSERT INTO channels (account_id, kind, name, config) VALUES ($1, $2, $3, $4) RETURNING id",
            actor.account_id,
            spec.kind,
            spec.name,
            config,
        )
        await audit.record(conn, actor, RESOURCE, "create", new_id, audit.fields_of(body))
        row = await conn.fetchrow(SELECT + " WHERE t.id = $1", new_id)
    return render(row, shown=shown)


async def get(deps: Deps, actor: Actor, channel_id: int) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    return render(await _owned(deps.pool, actor, channel_id))


async def listing(
    deps: Deps, actor: Actor, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    return await paging.account_listing(deps.pool, SELECT, actor.account_id, limit, cursor, render)


async def update(deps: Deps, actor: Actor, channel_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A new name, or new settings checked against the channel's kind (``patched``)."""
    authorize(actor, RESOURCE, "write")
    patch = validated(ChannelPatch, body)
    vetted: list[tuple[str, str]] | None = None
    if patch.config is not None:
        # Vetted before the transaction: a lookup may take seconds.
        current = await _owned(deps.pool, actor, channel_id)
        kind, settings = patched(deps.secret_box, current, patch.config)
        vetted = target_hosts(kind, settings)
        await _vet(deps, vetted)
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _owned(conn, actor, channel_id)
        config: dict[str, Any] | None = None
        shown: dict[str, Any] = {}
        if patch.config is not None:
            kind, settings = patched(deps.secret_box, current, patch.config)
            if target_hosts(kind, settings) != vetted:  # a kept secret URL changed meanwhile
                await _vet(deps, target_hosts(kind, settings))
            config, shown = stored(deps.secret_box, kind, config_values(settings))
        await conn.execute(
            """UPDATE channels SET name = coalesce($2, name), config = coalesce($3, config),
                                   updated_at = now()
               WHERE id = $1""",
            current["id"],
            patch.name,
            config,
        )
        await audit.record(conn, actor, RESOURCE, "update", channel_id, audit.fields_of(body))
        row = await _owned(conn, actor, channel_id)
    return render(row, shown=shown)


async def delete(deps: Deps, actor: Actor, channel_id: int) -> None:
    """The channel goes, detached from its monitors (``monitor_channels`` cascades)."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        deleted = await conn.fetchval(
            "DELETE FROM channels WHERE id = $1 AND account_id = $2 RETURNING id",
            channel_id,
            actor.account_id,
        )
        if deleted is None:
            raise not_found(WHAT)
        await audit.record(conn, actor, RESOURCE, "delete", channel_id)


async def send_test(deps: Deps, actor: Actor, channel_id: int) -> dict[str, Any]:
    """Queue a test message on the same path as real alerts: outbox, relay, stream, alerter."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await _owned(conn, actor, channel_id)
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
            "channels": [carried(row)],
        }
        await conn.execute(
            "INSERT INTO outbox (event_id, monitor_id, kind, payload) VALUES ($1, NULL, 'test', $2)",
            event_id,
            event,
        )
        await audit.record(conn, actor, RESOURCE, "test", channel_id)
    return {"event_id": str(event_id), "status": "queued"}


# -- what the operations check and store ----------------------------------------------------------


def kind_error(exc: ValidationError) -> DomainError | None:
    """A body whose ``kind`` is missing or unknown: a 422 that lists the kinds (pydantic's own
    message names the union's tags, which no client wrote)."""
    first = exc.errors(include_url=False)[0]
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return DomainError(422, "invalid", f"kind: must be one of {', '.join(sorted(CHANNEL_KINDS))}", "kind")
    return None


def stored(box: SecretBox, kind: ChannelKind, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A validated config as stored (what the kind generates filled in, secrets sealed), and
    the secrets generated here, to be shown once in this answer."""
    config = kind.prepare(dict(given)) if kind.prepare is not None else given
    shown = {k: v for k, v in config.items() if k in kind.secrets and given.get(k) is None and v is not None}
    return box.seal_fields(config, kind.secrets), shown


def patched(
    box: SecretBox, current: Mapping[str, Any], given: dict[str, Any]
) -> tuple[ChannelKind, BaseModel]:
    """The new settings, validated against the channel's kind; a secret sent back masked
    (``********``) or left out keeps the stored one, and one the kind generates (a webhook's
    signing secret) sent as ``null`` is made anew (by ``stored``) and shown once."""
    kind = CHANNEL_KINDS.get(current["kind"])
    if kind is None:
        raise DomainError(409, "conflict", f"this version cannot change channels of kind {current['kind']!r}")
    stored_config = current["config"]
    merged = dict(given)
    for name in kind.secrets:
        # Sent back masked, or left out: the stored secret stays (a webhook's signing secret
        # must not change behind its receiver's back). ``null`` removes an optional one.
        if (merged.get(name) == MASK or name not in merged) and stored_config.get(name) is not None:
            merged[name] = box.open(stored_config[name])
    try:
        settings = kind.config.model_validate(merged)
    except ValidationError as exc:
        first = from_validation(exc, kind.config)
        field = f"config.{first.field}" if first.field else "config"
        raise DomainError(422, "invalid", f"config.{first}", field) from None
    return kind, settings


async def _vet(deps: Deps, targets: list[tuple[str, str]]) -> None:
    for name, host in targets:
        await vet_host(deps.resolver, host, f"config.{name}")


async def _owned(conn: asyncpg.Connection | asyncpg.Pool, actor: Actor, channel_id: int) -> asyncpg.Record:
    row = await conn.fetchrow(SELECT + " WHERE t.id = $1 AND t.account_id = $2", channel_id, actor.account_id)
    if row is None:
        raise not_found(WHAT)
    return row
