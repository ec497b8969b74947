"""``/api/v1/status-pages``: an account's public status pages (the pages themselves are served
by ``public.py``); and ``/api/v1/monitors/{id}/badge-token``, which replaces a monitor's badge
token (a README that leaked it stops showing anything).

A group names monitors of the caller's account: by id (each must be the account's, 422
otherwise) and by tag. A slug and a custom domain are unique over every account (409 naming
the field). A change is seen at once by visitors of this api process (its cached page is
dropped) and by the others within their cache period.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor.api.context import POOL, SETTINGS
from monitor.api.errors import ApiError, from_validation, not_found
from monitor.api.guard import account_id
from monitor.api.monitor_types import BADGE_PATH, public_base
from monitor.api.params import account_page, json_object, path_id, rfc3339
from monitor.api.schemas_status import Group, StatusPageCreate, StatusPagePatch
from monitor.status.service import PUBLIC

WHAT = "status page"
# The columns a body sets, as named in it.
FIELDS = ("slug", "title", "description", "logo_url", "favicon_url", "domain", "show_urls", "groups")
# Unique constraints, by the field that broke them.
# Status pages an account may have.
MAX_PAGES = 100
_UNIQUE = {"status_pages_slug_key": "slug", "status_pages_domain_key": "domain"}


def render(row: Mapping[str, Any], base: str) -> dict[str, Any]:
    return {
        "id": row["id"],
        "slug": row["slug"],
        "title": row["title"],
        "description": row["description"],
        "logo_url": row["logo_url"],
        "favicon_url": row["favicon_url"],
        "domain": row["domain"],
        "show_urls": row["show_urls"],
        "groups": row["groups"],
        "url": f"{base}/status/{row['slug']}",
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
    }


def _groups(groups: Sequence[Group]) -> list[dict[str, Any]]:
    return [
        {
            "name": g.name,
            "monitor_ids": list(dict.fromkeys(g.monitor_ids)),
            "tags": list(dict.fromkeys(g.tags)),
        }
        for g in groups
    ]


async def _check_groups(
    conn: asyncpg.Connection, account: int, groups: Sequence[dict[str, Any]], known: Collection[int] = ()
) -> None:
    """Each group shows something (ids or tags), and names only monitors of the account. An id
    in ``known`` (on the page already) whose monitor has since been deleted is dropped: the
    groups a GET answered can be sent back as they are."""
    for i, group in enumerate(groups):
        if not group["monitor_ids"] and not group["tags"]:
            raise ApiError(
                422, "invalid", f"groups.{i}.monitor_ids: give monitor_ids or tags (or both)",
                f"groups.{i}.monitor_ids",
            )  # fmt: skip
    wanted = [m for g in groups for m in g["monitor_ids"]]
    found = {
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM monitors WHERE account_id = $1 AND id = ANY($2::bigint[])", account, wanted
        )
    }
    for i, group in enumerate(groups):
        for monitor_id in group["monitor_ids"]:
            if monitor_id not in found and monitor_id not in known:
                field = f"groups.{i}.monitor_ids"
                raise ApiError(422, "invalid", f"{field}: no monitor {monitor_id}", field)
        group["monitor_ids"] = [m for m in group["monitor_ids"] if m in found]
    for i, group in enumerate(groups):
        if not group["monitor_ids"] and not group["tags"]:
            field = f"groups.{i}.monitor_ids"
            raise ApiError(422, "invalid", f"{field}: every monitor it named has been deleted", field)


def _check_domain(request: web.Request, domain: str | None) -> None:
    """A page's domain is not the api's own address (MONITOR_PUBLIC_URL): that would put the
    page at the root of everyone's api."""
    public = request.app[SETTINGS].public_url
    if domain is not None and public is not None and domain == (urlsplit(public).hostname or "").rstrip("."):
        raise ApiError(422, "invalid", "domain: this is the api's own address (MONITOR_PUBLIC_URL)", "domain")


async def _check_quota(conn: asyncpg.Connection, account: int) -> None:
    if await conn.fetchval("SELECT count(*) FROM status_pages WHERE account_id = $1", account) >= MAX_PAGES:
        raise ApiError(409, "quota_exceeded", f"this account has its quota of {MAX_PAGES} status pages")


def _conflict(exc: asyncpg.UniqueViolationError) -> ApiError:
    field = _UNIQUE.get(exc.constraint_name or "", "slug")
    return ApiError(409, "conflict", f"{field}: another status page has this {field}", field)


def _forget(request: web.Request, *slugs: str) -> None:
    desk = request.app.get(PUBLIC)
    if desk is not None:
        desk.forget(*slugs)


async def _owned(
    conn: asyncpg.Connection | asyncpg.Pool, request: web.Request, lock: str = ""
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"SELECT * FROM status_pages WHERE id = $1 AND account_id = $2 {lock}",
        path_id(request, what=WHAT),
        account_id(request),
    )
    if row is None:
        raise not_found(WHAT)
    return row


async def create_page(request: web.Request) -> web.Response:
    account = account_id(request)
    try:
        spec = StatusPageCreate.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc, StatusPageCreate) from None
    values: dict[str, Any] = spec.model_dump(include=set(FIELDS) - {"groups"})
    values["groups"] = _groups(spec.groups)
    _check_domain(request, spec.domain)
    async with request.app[POOL].acquire() as conn, conn.transaction():
        # Serialise creations of one account, so two at once cannot both slip under the quota.
        await conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", account)
        await _check_quota(conn, account)
        await _check_groups(conn, account, values["groups"])
        placeholders = ", ".join(f"${i}" for i in range(2, len(values) + 2))
        try:
            row = await conn.fetchrow(
                f"INSERT INTO status_pages (account_id, {', '.join(values)}) VALUES ($1, {placeholders}) "
                "RETURNING *",
                account,
                *values.values(),
            )
        except asyncpg.UniqueViolationError as exc:
            raise _conflict(exc) from None
    _forget(request, row["slug"])
    return web.json_response(
        render(row, public_base(request)),
        status=201,
        headers={"Location": f"/api/v1/status-pages/{row['id']}"},
    )


async def list_pages(request: web.Request) -> web.Response:
    page, next_cursor = await account_page(request, "status_pages", account_id(request))
    base = public_base(request)
    return web.json_response({"items": [render(r, base) for r in page], "next_cursor": next_cursor})


async def get_page(request: web.Request) -> web.Response:
    return web.json_response(render(await _owned(request.app[POOL], request), public_base(request)))


async def patch_page(request: web.Request) -> web.Response:
    account = account_id(request)
    try:
        patch = StatusPagePatch.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc, StatusPagePatch) from None
    given = patch.model_fields_set
    values: dict[str, Any] = {
        name: getattr(patch, name) for name in FIELDS if name in given and name != "groups"
    }
    if patch.groups is not None:
        values["groups"] = _groups(patch.groups)
    _check_domain(request, values.get("domain"))
    async with request.app[POOL].acquire() as conn, conn.transaction():
        current = await _owned(conn, request, "FOR UPDATE")
        if "groups" in values:
            known = {m for g in current["groups"] for m in g["monitor_ids"]}
            await _check_groups(conn, account, values["groups"], known)
        row = current
        if values:
            assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(values, start=2))
            try:
                row = await conn.fetchrow(
                    f"UPDATE status_pages SET {assignments}, updated_at = clock_timestamp() "
                    "WHERE id = $1 RETURNING *",
                    current["id"],
                    *values.values(),
                )
            except asyncpg.UniqueViolationError as exc:
                raise _conflict(exc) from None
    _forget(request, current["slug"], row["slug"])
    return web.json_response(render(row, public_base(request)))


async def delete_page(request: web.Request) -> web.Response:
    slug = await request.app[POOL].fetchval(
        "DELETE FROM status_pages WHERE id = $1 AND account_id = $2 RETURNING slug",
        path_id(request, what=WHAT),
        account_id(request),
    )
    if slug is None:
        raise not_found(WHAT)
    _forget(request, slug)
    return web.Response(status=204)


async def rotate_badge_token(request: web.Request) -> web.Response:
    """A new badge token for the monitor: its old badge URLs answer 404 from now on (in this
    api process at once, in others within their cache period)."""
    row = await request.app[POOL].fetchrow(
        """UPDATE monitors m SET badge_token = DEFAULT, updated_at = clock_timestamp()
           FROM (SELECT id, badge_token FROM monitors WHERE id = $1 AND account_id = $2 FOR UPDATE) old
           WHERE m.id = old.id RETURNING m.badge_token, old.badge_token AS old_token""",
        path_id(request, what="monitor"),
        account_id(request),
    )
    if row is None:
        raise not_found("monitor")
    desk = request.app.get(PUBLIC)
    if desk is not None:
        desk.forget_badge(row["old_token"])
    return web.json_response({"badge_url": f"{public_base(request)}{BADGE_PATH}{row['badge_token']}"})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/monitors/{id}/badge-token", rotate_badge_token)
    router.add_post("/api/v1/status-pages", create_page)
    router.add_get("/api/v1/status-pages", list_pages)
    router.add_get("/api/v1/status-pages/{id}", get_page)
    router.add_patch("/api/v1/status-pages/{id}", patch_page)
    router.add_delete("/api/v1/status-pages/{id}", delete_page)
