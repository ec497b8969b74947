"""Maintenance windows: the list (open now, next), one-off and recurring windows made and
changed (an RRULE or a cron line, a duration and a time zone), the monitors and tags one covers,
and a preview of the next occurrences of the schedule typed, before saving.

The preview is a submit button of the form itself (``action=preview``): the same post, the
schedule checked by ``domain.maintenance.preview`` (the rules and errors of ``create``),
nothing stored, the form shown again with its values and the next five spans. It works
without JavaScript.

A one-off window's times are typed on the clock of the form's time zone (``datetime-local``
inputs) and sent to the domain as instants with that zone's offset.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any
from zoneinfo import available_timezones

from aiohttp import web
from multidict import MultiDict

from monitor.dashboard import picks, render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import maintenance
from monitor.domain.errors import DomainError
from monitor.maintenance import RuleError, to_local, to_utc, zone
from monitor.status.service import PUBLIC
from monitor.times import rfc3339

PAGE_SIZE = 100
FIELDS = ("name", "kind", "once.from", "once.to", "recurring.rrule", "recurring.cron",
          "recurring.duration_minutes", "recurring.timezone", "recurring.starts_at", "monitor_ids",
          "tags", "notify", "public_text", "announce_hours")  # fmt: skip
NOTICES = {"saved": "The maintenance window was saved.", "deleted": "The maintenance window was deleted."}


@functools.cache
def zones() -> tuple[str, ...]:
    """The zones to suggest in the form (a datalist: any IANA name may still be typed)."""
    return tuple(sorted(z for z in available_timezones() if "/" in z or z == "UTC"))


def _id(request: web.Request) -> int:
    return path_id(request, "window_id", "maintenance window")


def _instant(text: str, tz_name: str) -> str:
    """A ``datetime-local`` value on the zone's clock as RFC 3339 (what the domain takes); text
    that is not one is passed on for the domain to name."""
    text = text.strip()
    try:
        local = datetime.fromisoformat(text)
        if local.tzinfo is not None:
            return text
        return rfc3339(to_utc(local, zone(tz_name or "UTC")))
    except (ValueError, RuleError):
        return text


def body_of(posted: MultiDict[str]) -> dict[str, Any]:
    """The domain's body from the form's fields."""
    tz = posted.get("recurring.timezone", "").strip() or "UTC"
    body: dict[str, Any] = {
        "name": posted.get("name", "").strip(),
        "monitor_ids": picks.monitor_ids(posted),
        "tags": picks.words(posted.get("tags", "")),
        "notify": posted.get("notify") == "true",
        # Blank is none (the domain reads it so): an edit that empties the field removes it.
        "public_text": posted.get("public_text", "").replace("\r\n", "\n").strip() or None,
        "announce_hours": _number(posted.get("announce_hours", "").strip() or "24"),
    }
    if posted.get("kind", "once") == "once":
        body["once"] = {
            "from": _instant(posted.get("once.from", ""), tz),
            "to": _instant(posted.get("once.to", ""), tz),
        }
    else:
        minutes = posted.get("recurring.duration_minutes", "").strip()
        recurring: dict[str, Any] = {
            "duration_minutes": _number(minutes),
            "timezone": tz,
        }
        for name in ("rrule", "cron", "starts_at"):
            value = posted.get(f"recurring.{name}", "").strip()
            if value:
                recurring[name] = value
        body["recurring"] = recurring
    return body


def _number(text: str) -> int | str:
    """A field's digits as a number; anything else passed on for the domain to name."""
    return int(text) if text.isdigit() and len(text) < 10 else text


def _local(value: str, tz_name: str) -> str:
    """An RFC 3339 instant as a ``datetime-local`` value on the zone's clock."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return to_local(moment, zone(tz_name)).isoformat(timespec="minutes")


def values_of(window: dict[str, Any]) -> dict[str, Any]:
    """A stored window as the form's values."""
    values: dict[str, Any] = {
        "name": window["name"],
        "kind": window["kind"] if window["kind"] == "once" else "recurring",
        "tags": picks.joined(window["tags"]),
        "monitor_ids": [str(i) for i in window["monitor_ids"]],
        "notify": window["notify"],
        "public_text": window["public_text"] or "",
        "announce_hours": str(window["announce_hours"]),
    }
    if window["once"]:
        once = window["once"]
        values.update({"once.from": _local(once["from"], "UTC"), "once.to": _local(once["to"], "UTC"),
                       "recurring.timezone": "UTC"})  # fmt: skip
    else:
        r = window["recurring"]
        starts = r["starts_at"][:16] if r["starts_at"].endswith(":00") else r["starts_at"]
        values.update({"recurring.rrule": r["rrule"] or "", "recurring.cron": r["cron"] or "",
                       "recurring.duration_minutes": str(r["duration_minutes"]),
                       "recurring.timezone": r["timezone"], "recurring.starts_at": starts})  # fmt: skip
    return values


def _posted_values(posted: MultiDict[str]) -> dict[str, Any]:
    values: dict[str, Any] = {k: v for k, v in posted.items() if k not in ("csrf", "monitor_ids", "action")}
    values["monitor_ids"] = posted.getall("monitor_ids", [])
    return values


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    found = await maintenance.listing(
        deps(request), viewer.actor, limit=PAGE_SIZE, cursor=request.query.get("cursor") or None
    )
    return render.page(
        request,
        viewer,
        "maintenance.html",
        title="Maintenance",
        items=found["items"],
        next_cursor=found["next_cursor"],
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )


async def _form(
    request: web.Request,
    viewer: Viewer,
    form: Form,
    *,
    window: dict[str, Any] | None = None,
    status: int = 200,
    preview: list[dict[str, Any]] | None = None,
) -> web.Response:
    monitors, more = await picks.choices(deps(request), viewer.actor)
    return render.page(
        request,
        viewer,
        "maintenance_form.html",
        status=status,
        title=f"Edit {window['name']}" if window else "Add a maintenance window",
        form=form,
        window=window,
        monitors=monitors,
        more_monitors=more,
        preview=preview,
        zones=zones(),
        notice=NOTICES.get(request.query.get("done", ""), ""),
    )


async def new_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    defaults = {"kind": "once", "recurring.timezone": "UTC", "recurring.duration_minutes": "60"}
    return await _form(request, viewer, Form(defaults))


async def _save(request: web.Request, viewer: Viewer, window: dict[str, Any] | None) -> web.StreamResponse:
    posted = await form_data(request)
    body = body_of(posted)
    values = _posted_values(posted)
    d = deps(request)
    try:
        if posted.get("action") == "preview":
            tz = body["recurring"]["timezone"] if "recurring" in body else posted.get("recurring.timezone")
            try:
                shown_in = zone(tz.strip()).key if tz and tz.strip() else None
            except RuleError:
                shown_in = None  # a zone that is not one: the recurring rule's check names it
            schedule: dict[str, Any] = {k: body[k] for k in ("once", "recurring") if k in body}
            spans = await maintenance.preview(viewer.actor, {**schedule, "shown_in": shown_in})
            return await _form(request, viewer, Form(values), window=window, preview=spans)
        if window is None:
            made = await maintenance.create(d, viewer.actor, body, published=request.app.get(PUBLIC))
        else:
            made = await maintenance.update(
                d, viewer.actor, window["id"], body, published=request.app.get(PUBLIC)
            )
    except DomainError as exc:
        if exc.status >= 500 or (exc.status == 403 and exc.field is None):
            raise
        return await _form(request, viewer, failed(values, exc, FIELDS), window=window, status=exc.status)
    return back(f"/maintenance/{made['id']}?done=saved")


async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _save(request, viewer, None)


async def edit_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    window = await maintenance.get(deps(request), viewer.actor, _id(request))
    return await _form(request, viewer, Form(values_of(window)), window=window)


async def update(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    window = await maintenance.get(deps(request), viewer.actor, _id(request))
    return await _save(request, viewer, window)


async def delete(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    await maintenance.delete(deps(request), viewer.actor, _id(request), published=request.app.get(PUBLIC))
    return back("/maintenance?done=deleted")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/maintenance", page(listing))
    router.add_get("/maintenance/new", page(new_form))
    router.add_post("/maintenance/new", page(create))
    router.add_get("/maintenance/{window_id}", page(edit_form))
    router.add_post("/maintenance/{window_id}", page(update))
    router.add_post("/maintenance/{window_id}/delete", page(delete))
