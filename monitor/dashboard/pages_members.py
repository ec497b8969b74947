"""Members of the account and their roles: the list, changing a role, removing a member, and
inviting someone by e-mail.

The rules are ``domain/members.py``'s and ``domain/invitations.py``'s: nobody gives a role above
their own, a member above the caller is not theirs to change, and the last owner stays (the
domain's 409 is shown next to the member's role). An invitation is e-mailed (it needs a mail
server, ``MONITOR_SMTP_HOST``; without one the page says to use ``monitor users invite``); its
token is only ever in the letter.
"""

from __future__ import annotations

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.pages_keys import roles_up_to
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import invitations, members
from monitor.domain.errors import DomainError
from monitor.domain.roles import rank
from monitor.web.keys import MAILER, SETTINGS

PAGE_SIZE = 200
NOTICES = {
    "role": "The role was changed.",
    "removed": "The member was removed; the keys they made here were revoked.",
    "invited": "The invitation was sent.",
}


def _user(request: web.Request) -> int:
    return path_id(request, "user_id", "member")


async def _list(
    request: web.Request,
    viewer: Viewer,
    *,
    status: int = 200,
    invite: Form | None = None,
    row_error: tuple[int, DomainError] | None = None,
    notice: str = "",
) -> web.Response:
    found = await members.listing(
        deps(request), viewer.actor, limit=PAGE_SIZE, cursor=request.query.get("cursor") or None
    )
    mine = rank(viewer.actor.role)
    return render.page(
        request,
        viewer,
        "members.html",
        status=status,
        title="Members",
        items=found["items"],
        next_cursor=found["next_cursor"],
        roles=roles_up_to(viewer),
        # Whom the caller may change: nobody above their own role.
        changeable={m["id"] for m in found["items"] if rank(m["role"]) <= mine},
        invite=invite or Form({"role": "viewer"}),
        row_error=row_error,
        can_mail=request.app.get(MAILER) is not None,
        notice=notice or NOTICES.get(request.query.get("done", ""), ""),
    )


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _list(request, viewer)


async def change_role(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    user_id = _user(request)
    posted = await form_data(request)
    try:
        await members.change_role(deps(request), viewer.actor, user_id, {"role": posted.get("role", "")})
    except DomainError as exc:
        if exc.status >= 500:
            raise
        return await _list(request, viewer, status=exc.status, row_error=(user_id, exc))
    return back("/members?done=role")


async def remove(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    user_id = _user(request)
    try:
        await members.remove(deps(request), viewer.actor, user_id)
    except DomainError as exc:
        if exc.status >= 500 or exc.status == 404:
            raise
        return await _list(request, viewer, status=exc.status, row_error=(user_id, exc))
    if user_id == viewer.actor.user_id:
        return back("/")
    return back("/members?done=removed")


async def invite(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    body = {"email": posted.get("email", "").strip(), "role": posted.get("role", "")}
    mailer = request.app.get(MAILER)
    try:
        if mailer is None:
            raise DomainError(
                503,
                "mail_unconfigured",
                "no mail server is set (MONITOR_SMTP_HOST): invite with `monitor users invite`",
            )
        settings = request.app[SETTINGS]
        base = settings.public_url or f"{request.scheme}://{request.host}"
        await invitations.invite(deps(request), viewer.actor, body, base_url=base, mailer=mailer)
    except DomainError as exc:
        if exc.status == 403 and exc.field is None:
            raise
        return await _list(request, viewer, status=exc.status, invite=failed(body, exc, ("email", "role")))
    return back("/members?done=invited")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/members", page(listing))
    router.add_post("/members/invite", page(invite))
    router.add_post("/members/{user_id}/role", page(change_role))
    router.add_post("/members/{user_id}/remove", page(remove))
