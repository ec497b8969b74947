"""Incident posts of a status page: the page's posts (open ones first) with a form for a new
one and its first update; a post's page with its timeline, a form for the next update (none
once it is resolved), its title, impact and what it affects changed, and its deletion.

What a post affects is picked among the page's groups (checkboxes of their names) and the
account's monitors (the domain says which of them the page does not show, next to the field).
The update's text is Markdown; the timeline shows it as the public page does (the domain's
``html``, made by the sanitiser), so an editor sees what visitors will.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from multidict import MultiDict

from monitor.dashboard import picks, render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.pages_status_pages import base_of
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import posts, status_pages
from monitor.domain.errors import DomainError
from monitor.domain.schemas.posts import IMPACTS, STATES
from monitor.status.service import PUBLIC

PAGE_SIZE = 100
IMPACT_OPTIONS = [(i, i.capitalize()) for i in IMPACTS]
STATE_OPTIONS = [(s, s.capitalize()) for s in STATES]
FIELDS = ("title", "impact", "monitor_ids", "groups", "update.state", "update.text")
UPDATE_FIELDS = ("state", "text")
NOTICES = {
    "saved": "The post was saved.",
    "updated": "The update was posted.",
    "deleted": "The post was deleted.",
}


def _page_id(request: web.Request) -> int:
    return path_id(request, "page_id", "status page")


def _post_id(request: web.Request) -> int:
    return path_id(request, "post_id", "post")


def affected_of(posted: MultiDict[str]) -> dict[str, Any]:
    return {"monitor_ids": picks.monitor_ids(posted), "groups": posted.getall("groups", [])}


def body_of(posted: MultiDict[str]) -> dict[str, Any]:
    """A new post's body from the form's fields."""
    return {
        "title": posted.get("title", "").strip(),
        "impact": posted.get("impact", "minor"),
        **affected_of(posted),
        "update": {
            "state": posted.get("update.state", "investigating"),
            "text": posted.get("update.text", ""),
        },
    }


def _values(posted: MultiDict[str]) -> dict[str, Any]:
    values: dict[str, Any] = {k: v for k, v in posted.items() if k not in ("csrf", "monitor_ids", "groups")}
    values["monitor_ids"] = posted.getall("monitor_ids", [])
    values["groups"] = posted.getall("groups", [])
    return values


async def _listing(request: web.Request, viewer: Viewer, form: Form, *, status: int = 200) -> web.Response:
    d, page_id = deps(request), _page_id(request)
    found = await status_pages.get(d, viewer.actor, page_id, base=base_of(request))
    listed = await posts.listing(
        d, viewer.actor, page_id, base=base_of(request), limit=PAGE_SIZE,
        cursor=request.query.get("cursor") or None,
    )  # fmt: skip
    monitors, more = await picks.choices(d, viewer.actor)
    items = sorted(listed["items"], key=lambda p: p["state"] == "resolved")
    return render.page(
        request, viewer, "posts.html", status=status, title=f"Incident posts of {found['title']}",
        found=found, items=items, next_cursor=listed["next_cursor"], form=form, monitors=monitors,
        more_monitors=more, impacts=IMPACT_OPTIONS, states=STATE_OPTIONS,
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )  # fmt: skip


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _listing(request, viewer, Form({"impact": "minor", "update.state": "investigating"}))


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    try:
        made = await posts.create(
            deps(request), viewer.actor, _page_id(request), body_of(posted),
            base=base_of(request), published=request.app.get(PUBLIC),
        )  # fmt: skip
    except DomainError as exc:
        if exc.status >= 500 or (exc.status == 403 and exc.field is None) or exc.status == 404:
            raise
        return await _listing(request, viewer, failed(_values(posted), exc, FIELDS), status=exc.status)
    return back(f"/posts/{made['id']}?done=saved")


async def _one(
    request: web.Request,
    viewer: Viewer,
    *,
    edit: Form | None = None,
    update: Form | None = None,
    status: int = 200,
) -> web.Response:
    d = deps(request)
    post = await posts.get(d, viewer.actor, _post_id(request), base=base_of(request))
    found = await status_pages.get(d, viewer.actor, post["page_id"], base=base_of(request))
    monitors, more = await picks.choices(d, viewer.actor)
    current = {"title": post["title"], "impact": post["impact"],
               "monitor_ids": [str(m) for m in post["monitor_ids"]], "groups": post["groups"]}  # fmt: skip
    return render.page(
        request, viewer, "post_edit.html", status=status, title=post["title"], post=post, found=found,
        edit=edit or Form(current), update=update or Form({"state": post["state"]}), monitors=monitors,
        more_monitors=more, impacts=IMPACT_OPTIONS, states=STATE_OPTIONS,
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )  # fmt: skip


async def show(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _one(request, viewer)


def _refusable(exc: DomainError) -> bool:
    return not (exc.status >= 500 or exc.status == 404 or (exc.status == 403 and exc.field is None))


async def change(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    body = {
        "title": posted.get("title", "").strip(),
        "impact": posted.get("impact", ""),
        **affected_of(posted),
    }
    try:
        await posts.update(
            deps(request), viewer.actor, _post_id(request), body,
            base=base_of(request), published=request.app.get(PUBLIC),
        )  # fmt: skip
    except DomainError as exc:
        if not _refusable(exc):
            raise
        return await _one(request, viewer, edit=failed(_values(posted), exc, FIELDS), status=exc.status)
    return back(f"/posts/{_post_id(request)}?done=saved")


async def add_update(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    body = {"state": posted.get("state", ""), "text": posted.get("text", "")}
    try:
        await posts.add_update(
            deps(request), viewer.actor, _post_id(request), body,
            base=base_of(request), published=request.app.get(PUBLIC),
        )  # fmt: skip
    except DomainError as exc:
        if not _refusable(exc):
            raise
        return await _one(request, viewer, update=failed(dict(body), exc, UPDATE_FIELDS), status=exc.status)
    return back(f"/posts/{_post_id(request)}?done=updated")


async def delete(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    d, post_id = deps(request), _post_id(request)
    post = await posts.get(d, viewer.actor, post_id, base=base_of(request))
    await posts.delete(d, viewer.actor, post_id, published=request.app.get(PUBLIC))
    return back(f"/status-pages/{post['page_id']}/posts?done=deleted")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/status-pages/{page_id}/posts", page(listing))
    router.add_post("/status-pages/{page_id}/posts", page(create))
    router.add_get("/posts/{post_id}", page(show))
    router.add_post("/posts/{post_id}", page(change))
    router.add_post("/posts/{post_id}/updates", page(add_update))
    router.add_post("/posts/{post_id}/delete", page(delete))
