"""API keys: the list (revoked ones stay listed, with when), making one with a role no higher
than one's own, and revoking.

A new key is shown once, on the page that answers the post that made it (that answer is not
a redirect, so no URL ever carries it, and ``Cache-Control: no-store`` keeps it out of the
browser's history); only its prefix is listed after.
"""

from __future__ import annotations

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import keys
from monitor.domain.context import ROLES
from monitor.domain.errors import DomainError
from monitor.domain.roles import rank

PAGE_SIZE = 100


def roles_up_to(viewer: Viewer) -> list[tuple[str, str]]:
    """The roles a person may give (none above their own), as a select's options."""
    return [(r, r) for r in ROLES if rank(r) <= rank(viewer.actor.role)]


async def _list(
    request: web.Request, viewer: Viewer, form: Form | None = None, status: int = 200
) -> web.Response:
    found = await keys.listing(
        deps(request), viewer.actor, limit=PAGE_SIZE, cursor=request.query.get("cursor") or None
    )
    notice = {"revoked": "The key was revoked: requests with it are refused from now on."}
    return render.page(
        request,
        viewer,
        "keys.html",
        status=status,
        title="API keys",
        items=found["items"],
        next_cursor=found["next_cursor"],
        form=form or Form({"role": viewer.role}),
        roles=roles_up_to(viewer),
        notice=notice.get(request.query.get("done", ""), ""),
    )


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _list(request, viewer)


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    body = {"name": posted.get("name", "").strip(), "role": posted.get("role") or None}
    try:
        made = await keys.create(deps(request), viewer.actor, body)
    except DomainError as exc:
        if exc.status >= 500:
            raise
        values = {"name": body["name"], "role": body["role"] or ""}
        return await _list(request, viewer, failed(values, exc, ("name", "role")), exc.status)
    return render.page(request, viewer, "key_created.html", title="API key made", key=made)


async def revoke(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    key_id = path_id(request, "key_id", "key")
    await keys.revoke(deps(request), viewer.actor, key_id)
    return back("/keys?done=revoked")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/keys", page(listing))
    router.add_post("/keys", page(create))
    router.add_post("/keys/{key_id}/revoke", page(revoke))
