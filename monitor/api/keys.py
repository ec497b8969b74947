"""``/api/v1/keys``: the caller's account's API keys (the secret is shown once, at creation)."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor import accounts
from monitor.api.context import POOL
from monitor.api.errors import from_validation, not_found
from monitor.api.guard import account_id
from monitor.api.params import account_page, json_object, path_id, rfc3339
from monitor.api.schemas import KeyCreate


def render(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "prefix": f"{accounts.KEY_PREFIX}{row['prefix']}",
        "created_at": rfc3339(row["created_at"]),
        "revoked_at": rfc3339(row["revoked_at"]),
    }


async def create_key(request: web.Request) -> web.Response:
    try:
        spec = KeyCreate.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc) from None
    pool = request.app[POOL]
    new = await accounts.create_key(pool, account_id(request), spec.name)
    row = await pool.fetchrow("SELECT * FROM api_keys WHERE id = $1", new.id)
    return web.json_response({**render(row), "key": new.key}, status=201)


async def list_keys(request: web.Request) -> web.Response:
    page, next_cursor = await account_page(request, "api_keys", account_id(request))
    return web.json_response({"items": [render(r) for r in page], "next_cursor": next_cursor})


async def revoke_key(request: web.Request) -> web.Response:
    revoked = await request.app[POOL].fetchval(
        """UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
           WHERE id = $1 AND account_id = $2 RETURNING id""",
        path_id(request, what="key"),
        account_id(request),
    )
    if revoked is None:
        raise not_found("key")
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/keys", create_key)
    router.add_get("/api/v1/keys", list_keys)
    router.add_delete("/api/v1/keys/{id}", revoke_key)
