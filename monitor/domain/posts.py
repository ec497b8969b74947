"""Incident posts on status pages: what the people who run the services tell the page's
visitors ("we are investigating", "fixed, here is what happened").

A post is on one status page of the caller's account, and names what it affects among what
that page shows: monitors by id (each must be one the page's groups show, by id or by tag: 422
naming ``monitor_ids.<i>`` otherwise) and the page's groups by name (``groups.<i>``). One page
per post is the simpler model: what a post affects is always judged against one page's
monitors, and its permalink is under that page. A post is made with its first update; each
update after it adds to the timeline, and the post's state is its last update's. An update
that resolves the post closes it: another is refused (409 ``resolved`` naming ``state``).

Writes are for editors and up, reads for viewers (``roles.RULES``: ``posts``); each write is in
the audit log. What serves the pages (``Published``) is told of every change, so this
process's visitors see it at once, other api processes within their cache period.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import asyncpg

from monitor import markdown
from monitor.domain import audit, paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.posts import PostCreate, PostPatch, UpdateCreate
from monitor.domain.status_pages import PAGE_PATH
from monitor.times import rfc3339, rfc3339_or_none

RESOURCE = "posts"
WHAT = "post"
# A post's permalink: the page's address, this, then the post's id.
POSTS_PATH = "/posts/"
# Updates a post may have, and posts a page may have.
MAX_UPDATES = 200
MAX_POSTS = 10_000
_SELECT = "SELECT p.*, s.slug FROM incident_posts p JOIN status_pages s ON s.id = p.page_id"


class Published(Protocol):
    """What serves the pages from memory (``monitor.status.service.StatusDesk``)."""

    def forget(self, *slugs: str) -> None: ...

    def forget_post(self, slug: str, post_id: int) -> None: ...


def permalink(slug: str, post_id: int) -> str:
    """A post's path, under its page's."""
    return f"{PAGE_PATH}{slug}{POSTS_PATH}{post_id}"


def render_update(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "state": row["state"],
        "text": row["body"],
        "html": markdown.html_of(row["body"], row["html"], row["renderer"]),
        "created_at": rfc3339(row["created_at"]),
    }


def render(row: Mapping[str, Any], updates: Sequence[Mapping[str, Any]], base: str) -> dict[str, Any]:
    """A post as its owner sees it (``Post``), read at ``base``; ``updates`` oldest first."""
    return {
        "id": row["id"],
        "page_id": row["page_id"],
        "title": row["title"],
        "impact": row["impact"],
        "state": row["state"],
        "monitor_ids": list(row["monitor_ids"]),
        "groups": list(row["groups"]),
        "url": f"{base}{permalink(row['slug'], row['id'])}",
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
        "resolved_at": rfc3339_or_none(row["resolved_at"]),
        "updates": [render_update(u) for u in reversed(updates)],
    }


# -- operations -----------------------------------------------------------------------------------


async def create(
    deps: Deps,
    actor: Actor,
    page_id: int,
    body: Mapping[str, Any],
    *,
    base: str,
    published: Published | None = None,
) -> dict[str, Any]:
    """A post on the page ``page_id``, with its first update."""
    authorize(actor, RESOURCE, "write")
    spec = validated(PostCreate, body)
    async with deps.pool.acquire() as conn, conn.transaction():
        page = await _page(conn, actor, page_id, "FOR UPDATE")
        if (
            await conn.fetchval("SELECT count(*) FROM incident_posts WHERE page_id = $1", page_id)
            >= MAX_POSTS
        ):
            raise DomainError(409, "quota_exceeded", f"this status page has its quota of {MAX_POSTS} posts")
        monitor_ids = await _check_monitors(conn, page, spec.monitor_ids)
        groups = _check_groups(page, spec.groups)
        state = spec.update.state
        row = await conn.fetchrow(
            """INSERT INTO incident_posts
                   (account_id, page_id, title, impact, monitor_ids, groups, state, resolved_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7::text,
                       CASE WHEN $7::text = 'resolved' THEN clock_timestamp() END)
               RETURNING *, $8::text AS slug""",
            actor.account_id, page_id, spec.title, spec.impact, monitor_ids, groups, state, page["slug"],
        )  # fmt: skip
        update = await _insert_update(conn, row["id"], spec.update)
        await audit.record(conn, actor, RESOURCE, "create", row["id"], audit.fields_of(body))
    _tell(published, row)
    return render(row, [update], base)


async def get(deps: Deps, actor: Actor, post_id: int, *, base: str) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        row = await _owned(conn, actor, post_id)
        updates = await _updates(conn, [post_id])
    return render(row, updates.get(post_id, []), base)


async def listing(
    deps: Deps,
    actor: Actor,
    page_id: int,
    *,
    base: str,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
) -> dict[str, Any]:
    """The page's posts, newest first, in keyset pages."""
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    before = paging.decode_cursor(cursor, (int,))
    async with deps.pool.acquire() as conn:
        await _page(conn, actor, page_id)
        rows = await conn.fetch(
            f"{_SELECT} WHERE p.page_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3",
            page_id,
            before[0] if before else paging.MAX_ID,
            limit + 1,
        )
        shown, next_cursor = paging.next_page(rows, limit)
        updates = await _updates(conn, [r["id"] for r in shown])
    return {"items": [render(r, updates.get(r["id"], []), base) for r in shown], "next_cursor": next_cursor}


async def update(
    deps: Deps,
    actor: Actor,
    post_id: int,
    body: Mapping[str, Any],
    *,
    base: str,
    published: Published | None = None,
) -> dict[str, Any]:
    """Only the fields given change (title, impact, what it affects); the timeline grows by
    ``add_update`` only."""
    authorize(actor, RESOURCE, "write")
    patch = validated(PostPatch, body)
    given = patch.model_fields_set
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _owned(conn, actor, post_id, "FOR UPDATE OF p")
        values: dict[str, Any] = {n: getattr(patch, n) for n in ("title", "impact") if n in given}
        if patch.monitor_ids is not None or patch.groups is not None:
            page = await _page(conn, actor, current["page_id"])
            if patch.monitor_ids is not None:
                values["monitor_ids"] = await _check_monitors(
                    conn, page, patch.monitor_ids, known=current["monitor_ids"]
                )
            if patch.groups is not None:
                values["groups"] = _check_groups(page, patch.groups, known=current["groups"])
        row = current
        if values:
            assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(values, start=3))
            row = await conn.fetchrow(
                f"UPDATE incident_posts SET {assignments}, updated_at = clock_timestamp() "
                "WHERE id = $1 RETURNING *, $2::text AS slug",
                post_id,
                current["slug"],
                *values.values(),
            )
        await audit.record(conn, actor, RESOURCE, "update", post_id, audit.fields_of(body))
        updates = await _updates(conn, [post_id])
    _tell(published, row)
    return render(row, updates.get(post_id, []), base)


async def add_update(
    deps: Deps,
    actor: Actor,
    post_id: int,
    body: Mapping[str, Any],
    *,
    base: str,
    published: Published | None = None,
) -> dict[str, Any]:
    """A new entry of the post's timeline: its state becomes the post's. Refused (409 naming
    ``state``) once the post is resolved."""
    authorize(actor, RESOURCE, "write")
    spec = validated(UpdateCreate, body)
    async with deps.pool.acquire() as conn, conn.transaction():
        current = await _owned(conn, actor, post_id, "FOR UPDATE OF p")
        if current["state"] == "resolved":
            raise DomainError(
                409, "resolved", "state: this post is resolved and takes no more updates (make a new post)",
                "state",
            )  # fmt: skip
        count = await conn.fetchval("SELECT count(*) FROM incident_post_updates WHERE post_id = $1", post_id)
        if count >= MAX_UPDATES:
            raise DomainError(409, "quota_exceeded", f"this post has its quota of {MAX_UPDATES} updates")
        made = await _insert_update(conn, post_id, spec)
        row = await conn.fetchrow(
            """UPDATE incident_posts SET state = $2::text, updated_at = $3::timestamptz,
                   resolved_at = CASE WHEN $2::text = 'resolved' THEN $3::timestamptz END
               WHERE id = $1 RETURNING *, $4::text AS slug""",
            post_id, spec.state, made["created_at"], current["slug"],
        )  # fmt: skip
        await audit.record(conn, actor, RESOURCE, "add_update", post_id, audit.fields_of(body))
        updates = await _updates(conn, [post_id])
    _tell(published, row)
    return render(row, updates.get(post_id, []), base)


async def delete(deps: Deps, actor: Actor, post_id: int, *, published: Published | None = None) -> None:
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            """DELETE FROM incident_posts p USING status_pages s
               WHERE p.id = $1 AND p.account_id = $2 AND s.id = p.page_id RETURNING p.id, s.slug""",
            post_id,
            actor.account_id,
        )
        if row is None:
            raise not_found(WHAT)
        await audit.record(conn, actor, RESOURCE, "delete", post_id)
    _tell(published, row)


# -- what the operations check ------------------------------------------------------------------


async def _check_monitors(
    conn: asyncpg.Connection, page: Mapping[str, Any], wanted: Sequence[int], known: Collection[int] = ()
) -> list[int]:
    """The ids, each once, in order, of monitors the page shows (named by a group, or with one
    of its groups' tags); a 422 naming the first that is not. An id in ``known`` (on the post
    already) that the page no longer shows is dropped: a read's answer can be sent back."""
    wanted = list(dict.fromkeys(wanted))
    named = [m for g in page["groups"] for m in g["monitor_ids"]]
    tags = sorted({t for g in page["groups"] for t in g["tags"]})
    found = {
        r["id"]
        for r in await conn.fetch(
            """SELECT id FROM monitors WHERE account_id = $1 AND id = ANY($2::bigint[])
                 AND (id = ANY($3::bigint[]) OR tags && $4::text[])""",
            page["account_id"],
            wanted,
            named,
            tags,
        )
    }
    for i, monitor_id in enumerate(wanted):
        if monitor_id not in found and monitor_id not in known:
            field = f"monitor_ids.{i}"
            raise DomainError(422, "invalid", f"{field}: no monitor {monitor_id} on this status page", field)
    return [m for m in wanted if m in found]


def _check_groups(page: Mapping[str, Any], wanted: Sequence[str], known: Collection[str] = ()) -> list[str]:
    """The names, each once, of the page's groups; a 422 naming the first that is none."""
    wanted = list(dict.fromkeys(wanted))
    names = {g["name"] for g in page["groups"]}
    for i, name in enumerate(wanted):
        if name not in names and name not in known:
            field = f"groups.{i}"
            raise DomainError(422, "invalid", f"{field}: this status page has no group {name!r}", field)
    return [g for g in wanted if g in names]


async def _insert_update(conn: asyncpg.Connection, post_id: int, spec: UpdateCreate) -> asyncpg.Record:
    return await conn.fetchrow(
        """INSERT INTO incident_post_updates (post_id, state, body, html, renderer)
           VALUES ($1, $2, $3, $4, $5) RETURNING *""",
        post_id,
        spec.state,
        spec.text,
        markdown.render(spec.text),
        markdown.RENDERER,
    )


async def _updates(conn: asyncpg.Connection, post_ids: Sequence[int]) -> dict[int, list[asyncpg.Record]]:
    """Each post's updates, oldest first."""
    found: dict[int, list[asyncpg.Record]] = {}
    rows = await conn.fetch(
        "SELECT * FROM incident_post_updates WHERE post_id = ANY($1::bigint[]) ORDER BY post_id, id",
        list(post_ids),
    )
    for r in rows:
        found.setdefault(r["post_id"], []).append(r)
    return found


async def _page(conn: asyncpg.Connection, actor: Actor, page_id: int, lock: str = "") -> asyncpg.Record:
    authorize(actor, "status_pages", "read")
    row = await conn.fetchrow(
        f"SELECT * FROM status_pages WHERE id = $1 AND account_id = $2 {lock}", page_id, actor.account_id
    )
    if row is None:
        raise not_found("status page")
    return row


async def _owned(conn: asyncpg.Connection, actor: Actor, post_id: int, lock: str = "") -> asyncpg.Record:
    row = await conn.fetchrow(
        f"{_SELECT} WHERE p.id = $1 AND p.account_id = $2 {lock}", post_id, actor.account_id
    )
    if row is None:
        raise not_found(WHAT)
    return row


def _tell(published: Published | None, row: Mapping[str, Any]) -> None:
    if published is not None:
        published.forget(row["slug"])
        published.forget_post(row["slug"], row["id"])
