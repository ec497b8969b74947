"""Alert channels: the list, a form per kind to add one (built from the kind's settings model:
``channel_form``), the edit form, a test message, deleting.

A secret is never shown again once stored: an edit form leaves secret fields empty, and an
empty one keeps the stored value. A secret the kind generates (a webhook's signing secret) is
shown once, on the page that answers the post that made it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from monitor.channels import REGISTRY as CHANNEL_KINDS
from monitor.channels.base import ChannelKind
from monitor.dashboard import channel_form, render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import channels
from monitor.domain.errors import DomainError
from monitor.secrets import MASK

PAGE_SIZE = 100


def _id(request: web.Request) -> int:
    return path_id(request, "channel_id", "channel")


def _kind(name: str) -> ChannelKind:
    kind = CHANNEL_KINDS.get(name)
    if kind is None:
        raise DomainError(422, "invalid", f"kind: must be one of {', '.join(sorted(CHANNEL_KINDS))}", "kind")
    return kind


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    found = await channels.listing(
        deps(request), viewer.actor, limit=PAGE_SIZE, cursor=request.query.get("cursor") or None
    )
    return render.page(
        request,
        viewer,
        "channels.html",
        title="Channels",
        items=found["items"],
        next_cursor=found["next_cursor"],
        kinds=CHANNEL_KINDS,
        notice=_notice(request.query.get("done", "")),
    )


def _notice(done: str) -> str:
    return {
        "deleted": "The channel was deleted.",
        "saved": "The channel was saved.",
        "tested": "A test message is on its way; it takes the path of real alerts.",
    }.get(done, "")


def _form(
    request: web.Request,
    viewer: Viewer,
    kind: ChannelKind,
    form: Form,
    *,
    channel: dict[str, Any] | None = None,
    status: int = 200,
    notice: str = "",
) -> web.Response:
    return render.page(
        request,
        viewer,
        "channel_form.html",
        status=status,
        title=f"Edit {channel['name']}" if channel else f"Add a {kind.title} channel",
        kind=kind,
        fields=channel_form.fields(kind),
        form=form,
        channel=channel,
        notice=notice,
    )


async def new_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    name = request.query.get("kind", "")
    if not name:
        return render.page(request, viewer, "channel_kinds.html", title="Add a channel", kinds=CHANNEL_KINDS)
    kind = _kind(name)
    return _form(request, viewer, kind, Form({"kind": name, **channel_form.defaults(kind)}))


def _shown(kind: ChannelKind) -> list[str]:
    """The fields of the kind's form, to tell which error goes next to which."""
    return ["name", "kind", *(f.name for f in channel_form.fields(kind))]


def _refused(exc: DomainError) -> bool:
    """An error to show as a page rather than on the form: not the form's fault."""
    return exc.status >= 500 or (exc.status == 403 and exc.field is None)


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    kind = _kind(posted.get("kind", ""))
    body = {
        "kind": kind.name,
        "name": posted.get("name", "").strip(),
        "config": channel_form.config_of(kind, posted, editing=False),
    }
    try:
        made = await channels.create(deps(request), viewer.actor, body)
    except DomainError as exc:
        if _refused(exc):
            raise
        values = channel_form.posted_values(kind, posted)
        return _form(request, viewer, kind, failed(values, exc, _shown(kind)), status=exc.status)
    generated = _generated(kind, made)
    if not generated:
        return back("/channels?done=saved")
    # A secret made for this channel: shown on this answer only, never again.
    return render.page(
        request, viewer, "channel_created.html", title="Channel added", channel=made, generated=generated
    )


def _generated(kind: ChannelKind, channel: dict[str, Any]) -> dict[str, Any]:
    """The secrets the kind made in this change (the only ones an answer shows unmasked)."""
    return {k: v for k, v in channel["config"].items() if k in kind.secrets and v not in (None, MASK)}


async def edit_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    channel = await channels.get(deps(request), viewer.actor, _id(request))
    kind = _kind(channel["kind"])
    values = {
        "name": channel["name"],
        "kind": channel["kind"],
        **channel_form.values_of(kind, channel["config"]),
    }
    return _form(
        request, viewer, kind, Form(values), channel=channel, notice=_notice(request.query.get("done", ""))
    )


async def update(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    d = deps(request)
    channel_id = _id(request)
    channel = await channels.get(d, viewer.actor, channel_id)
    kind = _kind(channel["kind"])
    posted = await form_data(request)
    body = {
        "name": posted.get("name", "").strip(),
        "config": channel_form.config_of(kind, posted, editing=True),
    }
    try:
        changed = await channels.update(d, viewer.actor, channel_id, body)
    except DomainError as exc:
        if _refused(exc):
            raise
        values = {**channel_form.posted_values(kind, posted), "kind": kind.name}
        return _form(
            request, viewer, kind, failed(values, exc, _shown(kind)), channel=channel, status=exc.status
        )
    generated = _generated(kind, changed)
    if not generated:
        return back(f"/channels/{channel_id}?done=saved")
    return render.page(
        request, viewer, "channel_created.html", title="Channel saved", channel=changed, generated=generated
    )


async def send_test(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    channel_id = _id(request)
    await channels.send_test(deps(request), viewer.actor, channel_id)
    return back(f"/channels/{channel_id}?done=tested")


async def delete(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    await channels.delete(deps(request), viewer.actor, _id(request))
    return back("/channels?done=deleted")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/channels", page(listing))
    router.add_get("/channels/new", page(new_form))
    router.add_post("/channels/new", page(create))
    router.add_get("/channels/{channel_id}", page(edit_form))
    router.add_post("/channels/{channel_id}", page(update))
    router.add_post("/channels/{channel_id}/test", page(send_test))
    router.add_post("/channels/{channel_id}/delete", page(delete))
