"""A monitor's page, ``/monitors/{id}``: its state, response times over a chosen range (a chart
drawn by ``static/chart.js`` from ``chart.json``, and without JavaScript a line and a table of
the same figures), its 90 days as the status pages' bars, incidents (with the open one's
**Acknowledge** form for editors, and the screenshot of its start for a browser monitor; the
latest one links to ``/monitors/{id}/screenshots``), the last run's steps where its checks run
some (a browser journey: each step's outcome and time, the failing one's error), the latest
page-speed result where its checks are Lighthouse runs (scores, metrics with the bounds asserted
on them, the top failed audits, what the vetting proxy refused), the latest checks with their
details, the maintenance that applies and its badges to copy.

Every figure comes from the domain layer: ``monitors.get`` (with its maintenance and location
views), ``charts`` (the range's response times, the days), ``history`` (uptime, incidents,
checks). The forms that change the monitor are ``/monitors/{id}/edit``'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp import web

from monitor.checks import REGISTRY
from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, headers, path_id
from monitor.domain import charts, history, incidents, monitors, screenshots
from monitor.domain.errors import DomainError
from monitor.status.render import bars
from monitor.status.view import WINDOWS, level
from monitor.web.keys import SETTINGS

CHECKS_PAGE = 20
INCIDENTS_PAGE = 10
BADGE_WINDOWS = tuple(WINDOWS)
SPARK_WIDTH, SPARK_HEIGHT = 600.0, 80.0


def public_base(request: web.Request) -> str:
    """Where people reach the api (MONITOR_PUBLIC_URL, else this request's origin): badges'
    and ping URLs to copy are absolute."""
    configured = request.app[SETTINGS].public_url
    return configured.rstrip("/") if configured else str(request.url.origin())


def can_acknowledge(viewer: Viewer) -> bool:
    return viewer.can("incidents", "acknowledge")


def monitor_id_of(request: web.Request, name: str = "id") -> int:
    return path_id(request, name, "incident" if name == "incident_id" else "monitor")


def spark(items: list[dict[str, Any]], key: str, top: float) -> str:
    """Points of an SVG polyline of ``key`` per bucket over the range's width, 0 at the bottom
    and ``top`` at the top (the same scale for every line of the chart); buckets without a
    figure are left out."""
    if not items or top <= 0:
        return ""
    step = SPARK_WIDTH / max(1, len(items) - 1)
    points = [
        f"{i * step:.1f},{1 + (SPARK_HEIGHT - 2) * (1 - item[key] / top):.1f}"
        for i, item in enumerate(items)
        if item[key] is not None
    ]
    return " ".join(points) if len(points) > 1 else ""


def journey_of(checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest check's steps, when it ran some (a browser journey's ``details.steps``): each
    with its number (0: the start page) and whether it passed, failed or did not run."""
    details = (checks[0].get("details") or {}) if checks else {}
    steps = details.get("steps")
    if not isinstance(steps, list) or not steps:
        return None
    outcomes = {True: "passed", False: "failed", None: "not run"}
    shown = [
        {"number": n, "name": step.get("name", ""), "outcome": outcomes.get(step.get("ok"), "not run"),
         "duration_ms": step.get("duration_ms"), "error": step.get("error")}
        for n, step in enumerate(steps)
        if isinstance(step, dict)
    ]  # fmt: skip
    return {"time": checks[0]["time"], "ok": checks[0]["ok"], "steps": shown,
            "failed_step": details.get("failed_step"), "final_url": details.get("final_url"),
            "refusals": details.get("refusals") or []}  # fmt: skip


# A page-speed result's figures as the page names them, with their units.
PAGESPEED_METRICS = (
    ("lcp_ms", "Largest Contentful Paint", "ms"),
    ("cls", "Cumulative Layout Shift", ""),
    ("tbt_ms", "Total Blocking Time", "ms"),
    ("fcp_ms", "First Contentful Paint", "ms"),
    ("speed_index_ms", "Speed Index", "ms"),
    ("ttfb_ms", "Server response time", "ms"),
)
PAGESPEED_SCORES = (("performance", "Performance"), ("accessibility", "Accessibility"),
                    ("best_practices", "Best practices"), ("seo", "SEO"))  # fmt: skip


def pagespeed_of(checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest check's Lighthouse figures, when it has some (a page-speed check's details):
    each score and metric with the bounds its assertions set and whether they held."""
    details = (checks[0].get("details") or {}) if checks else {}
    if "lighthouse_version" not in details:
        return None
    outcomes = [o for o in details.get("assertions") or [] if isinstance(o, dict)]

    def bounds(name: str) -> list[dict[str, Any]]:
        return [o for o in outcomes if str(o.get("assertion", "")).split(" ", 1)[0] == name]

    scores = details.get("scores") or {}
    metrics = details.get("metrics") or {}
    return {"time": checks[0]["time"], "ok": checks[0]["ok"], "error": checks[0].get("error"),
            "degraded": details.get("degraded"), "profile": details.get("profile"),
            "version": details.get("lighthouse_version"), "runtime_error": details.get("runtime_error"),
            "scores": [{"name": n, "label": label, "value": scores[n], "bounds": bounds(n)}
                       for n, label in PAGESPEED_SCORES if n in scores],
            "metrics": [{"name": n, "label": label, "unit": unit, "value": metrics.get(n),
                         "bounds": bounds(n)} for n, label, unit in PAGESPEED_METRICS if n in metrics],
            "audits": [a for a in details.get("failed_audits") or [] if isinstance(a, dict)],
            "warnings": details.get("warnings") or [], "refusals": details.get("refusals") or []}  # fmt: skip


def summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The range at a glance: checks, share up, the average of the successful checks (weighted
    by each bucket's), the lowest min and the highest p95 and max."""
    checks = sum(i["checks"] for i in items)
    up = sum(round(i["checks"] * (i["up_share"] or 0)) for i in items)
    timed = [(i["avg_ms"], i["checks"] * (i["up_share"] or 0)) for i in items if i["avg_ms"] is not None]
    weight = sum(w for _, w in timed)

    def most(key: str, pick: Any) -> float | None:
        values = [i[key] for i in items if i[key] is not None]
        return pick(values) if values else None

    return {
        "checks": checks,
        "up_share": up / checks if checks else None,
        "avg_ms": sum(a * w for a, w in timed) / weight if weight else None,
        "min_ms": most("min_ms", min),
        "p95_ms": most("p95_ms", max),
        "max_ms": most("max_ms", max),
    }


async def context(request: web.Request, viewer: Viewer, monitor_id: int) -> dict[str, Any]:
    """What the page shows; every read is the domain's."""
    d, actor, query = deps(request), viewer.actor, request.query
    base = public_base(request)
    monitor = (await monitors.get(d, actor, monitor_id)).monitor
    range_name, _ = charts.range_of(query.get("range") or None)
    location = query.get("location") or None
    if location is not None and location not in monitor["locations"]:
        location = None
    chart = await charts.response_times(d, actor, monitor_id, range_name)
    items = chart["items"]
    top = max((i["max_ms"] or i["p95_ms"] or 0 for i in items), default=0) or 0
    days = await charts.daily(d, actor, monitor_id)
    uptime = await history.uptime(d, actor, monitor_id, windows=",".join(WINDOWS))
    found_incidents = await history.incidents(
        d, actor, monitor_id, limit=INCIDENTS_PAGE, cursor=query.get("incidents") or None
    )
    found_checks = await history.checks(
        d, actor, monitor_id, limit=CHECKS_PAGE, cursor=query.get("cursor") or None, checked_from=location
    )
    maintenance = monitor.get("maintenance", [])
    # Browser monitors' screenshots (the latest, and each outage's with its incident).
    shooting = REGISTRY.get(monitor["type"]).screenshots
    shots = (await screenshots.listing(d, actor, monitor_id))["screenshots"] if shooting else []
    badge = monitor["badge_url"]
    badge_images = [("status", "State", f"{badge}/status.svg")]
    badge_images += [(f"uptime-{w}", f"Uptime over {w}", f"{badge}/uptime/{w}.svg") for w in ("24h", "30d")]
    badge_images += [("response-24h", "Response time over 24h", f"{badge}/response/24h.svg")]
    return {
        "monitor": monitor,
        "base": base,
        "in_maintenance": any(w["active_now"] for w in maintenance),
        "maintenance": maintenance,
        "range": range_name,
        "ranges": list(charts.RANGES),
        "chart": chart,
        "items": items,
        "glance": summary(items),
        "spark_avg": spark(items, "avg_ms", top),
        "spark_p95": spark(items, "p95_ms", top),
        "spark_top": top,
        "days": days,
        "bars": bars(days),
        "level": level,
        "uptime": uptime["windows"],
        "windows": list(WINDOWS),
        "incidents": found_incidents["items"],
        "incidents_next": found_incidents["next_cursor"],
        "checks": found_checks["items"],
        "checks_next": found_checks["next_cursor"],
        "checks_paged": bool(query.get("cursor")),
        "journey": None if query.get("cursor") or location else journey_of(found_checks["items"]),
        "speed_run": None if query.get("cursor") or location else pagespeed_of(found_checks["items"]),
        "location": location,
        "badges": badge_images,
        "can_edit": viewer.can("monitors"),
        "can_ack": can_acknowledge(viewer),
        "ack_form": Form(),
        "ack_for": None,
        "shooting": shooting,
        "shots": shots,
        "latest_shot": next((x for x in shots if x["role"] == "latest"), None),
        "incident_shots": {x["incident_id"]: x for x in shots if x["incident_id"] is not None},
    }


async def monitor_page(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    ctx = await context(request, viewer, monitor_id_of(request))
    return render.page(request, viewer, "monitor.html", title=ctx["monitor"]["name"], **ctx)


def columns(chart: dict[str, Any]) -> dict[str, Any]:
    """The chart's figures as columns (uPlot's data: one array per series, times in seconds)."""
    items = chart["items"]
    kept = ("monitor_id", "range", "from", "to", "bucket_seconds", "source", "breakdown")
    out: dict[str, Any] = {k: chart[k] for k in kept}
    out["time"] = [int(datetime.fromisoformat(i["start"].replace("Z", "+00:00")).timestamp()) for i in items]
    for key in ("checks", "up_share", "min_ms", "avg_ms", "p50_ms", "p95_ms", "max_ms"):
        out[key] = [i[key] for i in items]
    out["phases"] = None
    if chart["breakdown"]:
        out["phases"] = {p: [(i["phases"] or {}).get(p) for i in items] for p in charts.PHASES}
    return out


async def chart_json(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """``chart.json?range=``: the range's response times as columns, for ``static/chart.js``;
    an error as the API's JSON error body."""
    try:
        chart = await charts.response_times(
            deps(request), viewer.actor, monitor_id_of(request), request.query.get("range") or None
        )
    except DomainError as exc:
        if exc.status >= 500:
            raise
        body: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.field:
            body["field"] = exc.field
        return web.json_response({"error": body}, status=exc.status, headers=headers(exc.headers))
    return web.json_response(columns(chart), headers=headers())


async def acknowledge(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """The open incident's **Acknowledge** form: the domain records who and when (and the note),
    stops its reminders and tells the channels; back to the page. A refused note is shown on
    the form again."""
    monitor_id, incident_id = monitor_id_of(request), monitor_id_of(request, "incident_id")
    fields = await form_data(request)
    note = (fields.get("note") or "").strip()
    try:
        body = {"note": note or None}
        await incidents.acknowledge(deps(request), viewer.actor, monitor_id, incident_id, body)
    except DomainError as exc:
        if exc.status in (403, 404) or exc.status >= 500:
            raise
        ctx = await context(request, viewer, monitor_id)
        ctx.update(ack_form=failed({"note": note}, exc, ("note",)), ack_for=incident_id)
        return render.page(
            request, viewer, "monitor.html", status=exc.status, title=ctx["monitor"]["name"], **ctx
        )
    return back(f"/monitors/{monitor_id}#incidents")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get(r"/monitors/{id:\d+}", page(monitor_page))
    router.add_get(r"/monitors/{id:\d+}/chart.json", page(chart_json))
    router.add_post(r"/monitors/{id:\d+}/incidents/{incident_id:\d+}/acknowledge", page(acknowledge))
