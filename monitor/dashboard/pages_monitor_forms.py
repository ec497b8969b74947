"""Creating and changing monitors in the browser: ``/monitors/new`` (the type first, then its
form), ``/monitors/{id}/edit``, pause and resume, delete after a confirmation page, and "test
now" (``/monitors/test-now``: the form's body checked once by a scheduler, nothing saved).

Each form is made from its type's create body (``monitor_form``, ``schema_form``) and posted
back as a body the domain layer validates (``schema_body``): ``monitors.create`` takes it, an
edit sends ``monitors.update`` the fields that changed, under the ETag the form was read at.
A domain error comes back on the form, next to the field it names, what was typed kept; so
does a database or a scheduler that cannot be reached (a general message on the form rather
than the 503 page, so nothing typed is lost).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from monitor import logging as mlog
from monitor.checks import REGISTRY as CHECKS
from monitor.dashboard import monitor_form, render, schema_body
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, check_csrf, deps, form_data, path_id, safe_next
from monitor.db import UNAVAILABLE as DB_UNAVAILABLE
from monitor.domain import channels, csrf, monitors, trials
from monitor.domain.errors import DomainError
from monitor.domain.roles import authorize
from monitor.domain.schemas.monitors import CREATE_BODIES
from monitor.domain.session_ids import COOKIE
from monitor.web.keys import REDIS

log = mlog.get(__name__)
DB_DOWN = DomainError(
    503, "database_unavailable",
    "The database cannot be reached just now; nothing was saved. What you typed is kept: "
    "try again in a few seconds.",
)  # fmt: skip
FORM = "monitor_form"  # marks a response that is the form again (not the frame's 503 page)


def _kind_of(kind: str | None) -> str:
    if kind not in CREATE_BODIES:
        raise DomainError(404, "not_found", "no such monitor type")
    return str(kind)


async def _channels(
    request: web.Request, viewer: Viewer, posted: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """The account's channels as (id, label); the database away: those posted, by number."""
    try:
        found = await channels.listing(deps(request), viewer.actor, limit=1000)
    except DB_UNAVAILABLE:
        return [(c, f"Channel {c}") for c in posted]
    return [(str(c["id"]), f"{c['name']} ({c['kind']})") for c in found["items"]]


def _show(
    request: web.Request,
    viewer: Viewer | None,
    *,
    kind: str,
    choices: Sequence[tuple[str, str]],
    values: Mapping[str, Any],
    error: DomainError | None = None,
    monitor: Mapping[str, Any] | None = None,
    posted: Mapping[str, Any] | None = None,
    more: str = "",
    trial: Mapping[str, Any] | None = None,
    etag: str = "",
    action: str = "",
) -> web.Response:
    fields = monitor_form.fields(kind, choices, editing=monitor is not None)
    rows = monitor_form.rows_for(fields, values, posted, more)
    shown = monitor_form.with_blank_rows(fields, monitor_form.masked(fields, values), rows)
    form = failed(shown, error, monitor_form.names(fields)) if error else Form(shown)
    session_id = request.cookies.get(COOKIE, "")
    response = render.page(
        request,
        viewer,
        "monitor_form.html",
        status=error.status if error else 200,
        title=f"Edit {monitor['name']}" if monitor else f"New {kind} monitor",
        kind=kind,
        form=form,
        sections=monitor_form.sections(kind, fields),
        rows=rows,
        rows_field=monitor_form.ROWS_FIELD,
        monitor=monitor,
        action=action or (f"/monitors/{monitor['id']}/edit" if monitor else "/monitors/new"),
        trial=trial,
        etag=etag,
        csrf_token=viewer.csrf if viewer else (csrf.token(session_id) if session_id else ""),
    )
    response[FORM] = True
    return response


# -- new ------------------------------------------------------------------------------------------


async def new_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    authorize(viewer.actor, monitors.RESOURCE, "write")
    if not request.query.get("type"):
        return render.page(request, viewer, "monitor_types.html", title="Add a monitor",
                           kinds=monitor_form.kinds())  # fmt: skip
    kind = _kind_of(request.query.get("type"))
    choices = await _channels(request, viewer)
    fields = monitor_form.fields(kind, choices, editing=False)
    return _show(request, viewer, kind=kind, choices=choices, values=monitor_form.defaults(fields))


async def _read(
    request: web.Request, viewer: Viewer, kind: str, current: Mapping[str, Any] | None
) -> tuple[dict[str, Any], list[tuple[str, str]], dict[str, Any] | None, dict[str, Any], DomainError | None]:
    """(the posted form, the channels, the body or None, the values to show, an error)."""
    form = monitor_form.posted(await form_data(request))
    choices = await _channels(request, viewer, form.get("channel_ids", []))
    fields = monitor_form.fields(kind, choices, editing=current is not None)
    try:
        body, values = schema_body.body_of(fields, form, skip_defaults=current is None, current=current)
    except DomainError as exc:
        return form, choices, None, form, exc
    return form, choices, body, values, None


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    authorize(viewer.actor, monitors.RESOURCE, "write")
    raw = await form_data(request)
    kind = _kind_of(raw.get("type") or CHECKS.default)
    form, choices, body, values, error = await _read(request, viewer, kind, None)
    more = str(form.get("more", ""))
    if error is None and body is not None and not more:
        try:
            made = await monitors.create(deps(request), viewer.actor, body)
            return back(f"/monitors/{made.monitor['id']}")
        except DomainError as exc:
            error = exc
        except DB_UNAVAILABLE as exc:
            log.warning("dashboard.database_unavailable", error=type(exc).__name__)
            error = DB_DOWN
    return _show(
        request, viewer, kind=kind, choices=choices, values=values, error=error, posted=form, more=more
    )


# -- test now -------------------------------------------------------------------------------------


async def test_now(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """The form's body checked once by a scheduler (``trials.trial``), shown above the form kept;
    nothing saved. On an edit form, the stored monitor with the form's changes."""
    authorize(viewer.actor, monitors.RESOURCE, "write")
    raw = await form_data(request)
    monitor_id = raw.get("monitor_id", "")
    current = None
    if monitor_id.isdigit():
        current = (await monitors.get(deps(request), viewer.actor, int(monitor_id))).monitor
    kind = current["type"] if current else _kind_of(raw.get("type") or CHECKS.default)
    form, choices, body, values, error = await _read(request, viewer, kind, current)
    result = None
    if error is None and body is not None:
        if current is not None:
            body = {k: v for k, v in body.items() if k not in ("paused",)}
        try:
            result = await trials.trial(deps(request), viewer.actor, body, request.app.get(REDIS))
        except DomainError as exc:
            error = exc
        except DB_UNAVAILABLE:
            error = DB_DOWN
    return _show(request, viewer, kind=kind, choices=choices, values=values, error=error, posted=form,
                 monitor=current, trial=result, etag=str(raw.get("etag", "")))  # fmt: skip


# -- edit, pause, resume, delete ------------------------------------------------------------------


def _id(request: web.Request) -> int:
    return path_id(request, "id", "monitor")


async def edit_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    authorize(viewer.actor, monitors.RESOURCE, "write")
    found = await monitors.get(deps(request), viewer.actor, _id(request))
    current = found.monitor
    choices = await _channels(request, viewer)
    fields = monitor_form.fields(current["type"], choices, editing=True)
    values = schema_body.values_of(fields, current)
    return _show(request, viewer, kind=current["type"], choices=choices, values=values, monitor=current,
                 etag=found.etag)  # fmt: skip


async def edit(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    authorize(viewer.actor, monitors.RESOURCE, "write")
    d = deps(request)
    current = (await monitors.get(d, viewer.actor, _id(request))).monitor
    form, choices, body, values, error = await _read(request, viewer, current["type"], current)
    more = str(form.get("more", ""))
    etag = str(form.get("etag", ""))
    if error is None and body is not None and not more:
        patch = schema_body.changed(body, current)
        try:
            if patch:
                await monitors.update(d, viewer.actor, current["id"], patch, expected=(etag,) if etag else ())
            return back(f"/monitors/{current['id']}")
        except DomainError as exc:
            error = exc
        except DB_UNAVAILABLE:
            error = DB_DOWN
    return _show(request, viewer, kind=current["type"], choices=choices, values=values, error=error,
                 monitor=current, posted=form, more=more, etag=etag)  # fmt: skip


def _pausing(paused: bool) -> Any:
    async def view(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        form = await form_data(request)
        monitor_id = _id(request)
        await monitors.update(deps(request), viewer.actor, monitor_id, {"paused": paused})
        return back(safe_next(form.get("next"), f"/monitors/{monitor_id}"))

    return view


async def delete_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    authorize(viewer.actor, monitors.RESOURCE, "write")
    current = (await monitors.get(deps(request), viewer.actor, _id(request))).monitor
    return render.page(
        request, viewer, "monitor_delete.html", title=f"Delete {current['name']}", monitor=current
    )


async def delete(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    await monitors.delete(deps(request), viewer.actor, _id(request))
    return back("/")


# -- the frame: a form post the database cannot take comes back as the form ------------------------


def kept(view: Any, kind_of: Any) -> Any:
    """``page(view)``, but a post that meets a database that is away before the view runs (the
    session is looked up first) gets its form again with what was typed and a general error,
    rather than the 503 page. ``kind_of(request, form)`` names the form's type."""
    framed = page(view)

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await framed(request)
        if response.status != 503 or response.get(FORM):
            return response
        session_id = request.cookies.get(COOKIE, "")
        try:
            await check_csrf(request, session_id)
            raw = await form_data(request)
            form = monitor_form.posted(raw)
            kind = _kind_of(kind_of(request, raw))
        except DomainError:
            return response
        values = {k: v for k, v in form.items() if k not in ("csrf",)}
        choices = [(c, f"Channel {c}") for c in form.get("channel_ids", [])]
        action = request.path if request.path.endswith(("/new", "/edit")) else ""
        if not action:  # test now: back to the form it came from
            ident = str(form.get("monitor_id", ""))
            action = f"/monitors/{ident}/edit" if ident.isdigit() else "/monitors/new"
        return _show(request, None, kind=kind, choices=choices, values=values, error=DB_DOWN, posted=form,
                     action=action, etag=str(form.get("etag", "")))  # fmt: skip

    return handler


def _posted_kind(request: web.Request, raw: Mapping[str, str]) -> str:
    return raw.get("type") or CHECKS.default


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/monitors/new", page(new_form))
    router.add_post("/monitors/new", kept(create, _posted_kind))
    router.add_post("/monitors/test-now", kept(test_now, _posted_kind))
    router.add_get(r"/monitors/{id:\d{1,18}}/edit", page(edit_form))
    router.add_post(r"/monitors/{id:\d{1,18}}/edit", kept(edit, _posted_kind))
    router.add_post(r"/monitors/{id:\d{1,18}}/pause", page(_pausing(True)))
    router.add_post(r"/monitors/{id:\d{1,18}}/resume", page(_pausing(False)))
    router.add_get(r"/monitors/{id:\d{1,18}}/delete", page(delete_form))
    router.add_post(r"/monitors/{id:\d{1,18}}/delete", page(delete))
