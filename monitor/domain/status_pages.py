"""An account's public status pages: made, read, listed, changed and deleted; and a monitor's
badge token replaced (a README that leaked it stops showing anything).

A group names monitors of the caller's account: by id (each must be the account's, 422
otherwise) and by tag. A slug and a custom domain are unique over every account (409 naming
the field). What serves the pages (the api's status desk: ``Published``) is told of every
change, so its visitors see it at once; other api processes see it within their cache period.
Where the pages are reached (``base``: MONITOR_PUBLIC_URL, or the address the caller used) is
the face's to say.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import asyncpg

from monitor.domain import audit, paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.status_pages import Group, StatusPageCreate, StatusPagePatch
from monitor.times import rfc3339_or_none

RESOURCE = "status_pages"
WHAT = "status page"
# Where a page is read: this, then its slug (and .json, /feed.atom).
PAGE_PATH = "/status/"
# Where a monitor's badges are (monitor/api/public.py): this, its badge token, then
# /status.svg, /uptime/<window>.svg or /response/<window>.svg.
BADGE_PATH = "/badge/"
# The columns a body sets, as named in it.
FIELDS = ("slug", "title", "description", "logo_url", "favicon_url", "domain", "show_urls",
          "post_history_days", "groups")  # fmt: skip
# Status pages an account may have.
MAX_PAGES = 100
# Unique constraints, by the field that broke them.
_UNIQUE = {"status_pages_slug_key": "slug", "status_pages_domain_key": "domain"}


class Published(Protocol):
    """What serves the pages and badges from memory (``monitor.status.service.StatusDesk``)."""

    def forget(self, *slugs: str) -> None: ...

    def forget_badge(self, token: str) -> None: ...


def render(row: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A page as its owner sees it (``StatusPage``), read at ``base``."""
    return {
        "id": row["id"],
        "slug": row["slug"],
        "title": row["title"],
        "description": row["description"],
        "logo_url": row["logo_url"],
        "favicon_url": row["favicon_url"],
        "domain": row["domain"],
        "show_urls": row["show_urls"],
        "post_history_days": row["post_history_days"],
        "groups": row["groups"],
        "url": f"{base}{PAGE_PATH}{row['slug']}",
        "created_at": rfc3339_or_none(row["created_at"]),
        "updated_at": rfc3339_or_none(row["updated_at"]),
    }


# -- operations -----------------------------------------------------------------------------------


async def create(
    deps: Deps, actor: Actor, body: Mapping[str, Any], *, base: str, published: Published | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "write")
    spec = prepare(deps, body)
    values: dict[str, Any] = spec.model_dump(include=set(FIELDS) - {"groups"})
    values["groups"] = groups_of(spec.groups)
    account = actor.account_id
    async with deps.pool.acquire() as conn, conn.transaction():
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
            raise conflict(exc) from None
        await audit.record(conn, actor, RESOURCE, "create", row["id"], audit.fields_of(body))
    if published is not None:
        published.forget(row["slug"])
    return render(row, base)


async def get(deps: Deps, actor: Actor, page_id: int, *, base: str) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    return render(await _owned(deps.pool, actor, page_id), base)


async def listing(
    deps: Deps, actor: Actor, *, base: str, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None
) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    select = "SELECT * FROM status_pages t"
    return await paging.account_listing(
        deps.pool, select, actor.account_id, limit, cursor, lambda row: render(row, base)
    )


async def update(
    deps: Deps,
    actor: Actor,
    page_id: int,
    body: Mapping[str, Any],
    *,
    base: str,
    published: Published | None = None,
) -> dict[str, Any]:
    """Only the fields given change; ``groups`` replaces every group."""
    authorize(actor, RESOURCE, "write")
    patch = validated(StatusPagePatch, body)
    given = patch.model_fields_set
    values: dict[str, Any] = {
        name: getattr(patch, name) for name in FIELDS if name in given and name != "groups"
    }
    if patch.groups is not None:
        values["groups"] = groups_of(patch.groups)
    check_domain(values.get("domain"), deps.settings.public_url)
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _owned(conn, actor, page_id, "FOR UPDATE")
        if "groups" in values:
            known = {m for g in current["groups"] for m in g["monitor_ids"]}
            await _check_groups(conn, actor.account_id, values["groups"], known)
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
                raise conflict(exc) from None
        await audit.record(conn, actor, RESOURCE, "update", page_id, audit.fields_of(body))
    if published is not None:
        published.forget(current["slug"], row["slug"])
    return render(row, base)


async def delete(deps: Deps, actor: Actor, page_id: int, *, published: Published | None = None) -> None:
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        slug = await conn.fetchval(
            "DELETE FROM status_pages WHERE id = $1 AND account_id = $2 RETURNING slug",
            page_id,
            actor.account_id,
        )
        if slug is None:
            raise not_found(WHAT)
        await audit.record(conn, actor, RESOURCE, "delete", page_id)
    if published is not None:
        published.forget(slug)


async def rotate_badge_token(
    deps: Deps, actor: Actor, monitor_id: int, *, base: str, published: Published | None = None
) -> dict[str, Any]:
    """A new badge token for the monitor: its old badge URLs answer 404 from now on (where
    ``published`` serves them at once, elsewhere within their cache period)."""
    authorize(actor, "monitors", "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            """UPDATE monitors m SET badge_token = DEFAULT, updated_at = clock_timestamp()
               FROM (SELECT id, badge_token FROM monitors WHERE id = $1 AND account_id = $2 FOR UPDATE) old
               WHERE m.id = old.id RETURNING m.badge_token, old.badge_token AS old_token""",
            monitor_id,
            actor.account_id,
        )
        if row is None:
            raise not_found("monitor")
        await audit.record(conn, actor, "monitors", "rotate_badge_token", monitor_id)
    if published is not None:
        published.forget_badge(row["old_token"])
    return {"badge_url": f"{base}{BADGE_PATH}{row['badge_token']}"}


# -- what the operations check ------------------------------------------------------------------


def prepare(deps: Deps, body: Mapping[str, Any]) -> StatusPageCreate:
    """``body`` validated as :func:`create` takes it (422 naming the field): nothing written.
    ``monitor apply`` judges a file with it."""
    spec = validated(StatusPageCreate, body)
    check_domain(spec.domain, deps.settings.public_url)
    return spec


def groups_of(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """The groups as stored: each id and tag once, in the order given."""
    return [
        {
            "name": g.name,
            "monitor_ids": list(dict.fromkeys(g.monitor_ids)),
            "tags": list(dict.fromkeys(g.tags)),
        }
        for g in groups
    ]


def check_domain(domain: str | None, public_url: str | None) -> None:
    """A page's domain is not the api's own address (MONITOR_PUBLIC_URL): that would put the
    page at the root of everyone's api."""
    if (
        domain is not None
        and public_url is not None
        and domain == (urlsplit(public_url).hostname or "").rstrip(".")
    ):
        raise DomainError(
            422, "invalid", "domain: this is the api's own address (MONITOR_PUBLIC_URL)", "domain"
        )


def conflict(exc: asyncpg.UniqueViolationError) -> DomainError:
    field = _UNIQUE.get(exc.constraint_name or "", "slug")
    return DomainError(409, "conflict", f"{field}: another status page has this {field}", field)


async def _check_groups(
    conn: asyncpg.Connection, account: int, groups: Sequence[dict[str, Any]], known: Collection[int] = ()
) -> None:
    """Each group shows something (ids or tags), and names only monitors of the account. An id
    in ``known`` (on the page already) whose monitor has since been deleted is dropped: the
    groups a read answered can be sent back as they are."""
    for i, group in enumerate(groups):
        if not group["monitor_ids"] and not group["tags"]:
            raise DomainError(
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
                raise DomainError(422, "invalid", f"{field}: no monitor {monitor_id}", field)
        group["monitor_ids"] = [m for m in group["monitor_ids"] if m in found]
    for i, group in enumerate(groups):
        if not group["monitor_ids"] and not group["tags"]:
            field = f"groups.{i}.monitor_ids"
            raise DomainError(422, "invalid", f"{field}: every monitor it named has been deleted", field)


async def _check_quota(conn: asyncpg.Connection, account: int) -> None:
    if await conn.fetchval("SELECT count(*) FROM status_pages WHERE account_id = $1", account) >= MAX_PAGES:
        raise DomainError(409, "quota_exceeded", f"this account has its quota of {MAX_PAGES} status pages")


async def _owned(
    conn: asyncpg.Connection | asyncpg.Pool, actor: Actor, page_id: int, lock: str = ""
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"SELECT * FROM status_pages WHERE id = $1 AND account_id = $2 {lock}", page_id, actor.account_id
    )
    if row is None:
        raise not_found(WHAT)
    return row
