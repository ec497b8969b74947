"""Public status pages: the list (each with a link to the page itself), made and changed (slug,
title, description, images, a domain of its own, and groups of monitors by id and by tag),
deleted.

Groups are fieldsets ``groups.<n>.name``, ``groups.<n>.monitor_ids``, ``groups.<n>.tags`` (the
names the domain's errors give, so a message lands by its group): the page's groups and one
empty one; "Add a group" posts the form back with one more, without saving, so it works
without JavaScript. A group left empty is left out.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from multidict import MultiDict

from monitor.dashboard import picks, render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import status_pages
from monitor.domain.errors import DomainError
from monitor.status.service import PUBLIC
from monitor.web.keys import SETTINGS

PAGE_SIZE = 100
MAX_GROUPS = 50
TEXTS = ("slug", "title", "description", "logo_url", "favicon_url", "domain")
NOTICES = {"saved": "The status page was saved.", "deleted": "The status page was deleted."}


def base_of(request: web.Request) -> str:
    """Where visitors reach the pages: MONITOR_PUBLIC_URL, else the address of this request."""
    configured = request.app[SETTINGS].public_url
    return configured.rstrip("/") if configured else str(request.url.origin())


def _id(request: web.Request) -> int:
    return path_id(request, "page_id", "status page")


def _count(posted: MultiDict[str]) -> int:
    try:
        return max(1, min(MAX_GROUPS, int(posted.get("group_count", "1"))))
    except ValueError:
        return 1


def body_of(posted: MultiDict[str]) -> dict[str, Any]:
    body: dict[str, Any] = {name: posted.get(name, "").strip() or None for name in TEXTS}
    body["slug"] = body["slug"] or ""
    body["title"] = body["title"] or ""
    body["show_urls"] = posted.get("show_urls") == "true"
    days = posted.get("post_history_days", "90").strip()
    body["post_history_days"] = int(days) if days.isdigit() and len(days) < 6 else days
    groups = []
    for i in range(_count(posted)):
        name = posted.get(f"groups.{i}.name", "").strip()
        ids = picks.monitor_ids(posted, f"groups.{i}.monitor_ids")
        tags = picks.words(posted.get(f"groups.{i}.tags", ""))
        if name or ids or tags:
            groups.append({"name": name, "monitor_ids": ids, "tags": tags})
    body["groups"] = groups
    return body


def values_of(found: dict[str, Any], extra: int = 1) -> dict[str, Any]:
    values: dict[str, Any] = {name: found.get(name) or "" for name in TEXTS}
    values["show_urls"] = found.get("show_urls", False)
    values["post_history_days"] = str(found.get("post_history_days", 90))
    groups = found.get("groups", [])
    for i, g in enumerate(groups):
        values[f"groups.{i}.name"] = g["name"]
        values[f"groups.{i}.monitor_ids"] = [str(m) for m in g["monitor_ids"]]
        values[f"groups.{i}.tags"] = picks.joined(g["tags"])
    values["group_count"] = len(groups) + extra
    return values


def _posted_values(posted: MultiDict[str], extra: int = 0) -> dict[str, Any]:
    values: dict[str, Any] = {k: v for k, v in posted.items() if k not in ("csrf", "action")}
    for i in range(_count(posted)):
        values[f"groups.{i}.monitor_ids"] = posted.getall(f"groups.{i}.monitor_ids", [])
    values["group_count"] = min(MAX_GROUPS, _count(posted) + extra)
    return values


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    found = await status_pages.listing(
        deps(request), viewer.actor, base=base_of(request), limit=PAGE_SIZE,
        cursor=request.query.get("cursor") or None,
    )  # fmt: skip
    return render.page(
        request,
        viewer,
        "status_pages.html",
        title="Status pages",
        items=found["items"],
        next_cursor=found["next_cursor"],
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )


async def _form(
    request: web.Request,
    viewer: Viewer,
    form: Form,
    *,
    found: dict[str, Any] | None = None,
    status: int = 200,
) -> web.Response:
    monitors, more = await picks.choices(deps(request), viewer.actor)
    return render.page(
        request,
        viewer,
        "status_page_form.html",
        status=status,
        title=f"Edit {found['title']}" if found else "Add a status page",
        form=form,
        found=found,
        monitors=monitors,
        more_monitors=more,
        group_count=int(form.value("group_count", 1)),
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )


async def new_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _form(
        request, viewer, Form({"group_count": 1, "groups.0.name": "Services", "post_history_days": "90"})
    )


async def _save(request: web.Request, viewer: Viewer, found: dict[str, Any] | None) -> web.StreamResponse:
    posted = await form_data(request)
    if posted.get("action") == "add_group":
        return await _form(request, viewer, Form(_posted_values(posted, extra=1)), found=found)
    body = body_of(posted)
    d, base, published = deps(request), base_of(request), request.app.get(PUBLIC)
    try:
        if found is None:
            made = await status_pages.create(d, viewer.actor, body, base=base, published=published)
        else:
            made = await status_pages.update(
                d, viewer.actor, found["id"], body, base=base, published=published
            )
    except DomainError as exc:
        if exc.status >= 500 or (exc.status == 403 and exc.field is None):
            raise
        values = _posted_values(posted)
        shown = [
            *TEXTS,
            "show_urls",
            "post_history_days",
            "groups",
            *(k for k in values if k.startswith("groups.")),
        ]
        return await _form(request, viewer, failed(values, exc, shown), found=found, status=exc.status)
    return back(f"/status-pages/{made['id']}?done=saved")


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _save(request, viewer, None)


async def edit_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    found = await status_pages.get(deps(request), viewer.actor, _id(request), base=base_of(request))
    return await _form(request, viewer, Form(values_of(found)), found=found)


async def update(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    found = await status_pages.get(deps(request), viewer.actor, _id(request), base=base_of(request))
    return await _save(request, viewer, found)


async def delete(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    await status_pages.delete(deps(request), viewer.actor, _id(request), published=request.app.get(PUBLIC))
    return back("/status-pages?done=deleted")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/status-pages", page(listing))
    router.add_get("/status-pages/new", page(new_form))
    router.add_post("/status-pages/new", page(create))
    router.add_get("/status-pages/{page_id}", page(edit_form))
    router.add_post("/status-pages/{page_id}", page(update))
    router.add_post("/status-pages/{page_id}/delete", page(delete))
