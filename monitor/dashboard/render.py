"""The dashboard's HTML: one Jinja2 environment, autoescaped, with the filters its templates
share. A name, a URL or an error message is always text on the page, never markup.

``page(request, viewer, template, **context)`` renders a whole page, or only its ``main``
block when htmx asks for a part (``HX-Request``) and the template names one with
``partial``: a partial update then costs the rows, not the layout.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import jinja2
from aiohttp import web

from monitor import times
from monitor.dashboard import assets
from monitor.dashboard.web import SECURITY, Viewer, is_htmx, theme_of
from monitor.status.badges import uptime_badge
from monitor.status.view import duration_text, spark_points

STATUS_TEXT = {
    "up": "Up",
    "down": "Down",
    "degraded": "Degraded",
    "paused": "Paused",
    "unknown": "Waiting for the first check",
    "maintenance": "Maintenance",
}


def _parse(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def when(value: Any) -> str:
    moment = _parse(value)
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(value: Any) -> str:
    moment = _parse(value)
    return "" if moment is None else times.rfc3339(moment)


def ago(value: Any, now: datetime | None = None) -> str:
    """ "12 s ago", "3 min ago", "5 h ago", "2 days ago"; "never" for none."""
    moment = _parse(value)
    if moment is None:
        return "never"
    seconds = max(0.0, ((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''} ago"


def pct(value: float | None) -> str:
    return "no data" if value is None else uptime_badge(value)[0]


def ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def duration(seconds: float | None) -> str:
    return "-" if seconds is None else duration_text(int(seconds))


def asset(name: str) -> str:
    found = assets.ASSETS.get(name)
    return found.url if found is not None else ""


def integrity(name: str) -> str:
    found = assets.ASSETS.get(name)
    return found.integrity if found is not None else ""


def has_asset(name: str) -> bool:
    return name in assets.ASSETS


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("monitor.dashboard", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, iso=iso, ago=ago, pct=pct, ms=ms, duration=duration)
    env.globals.update(
        asset=asset, integrity=integrity, has_asset=has_asset, status_text=STATUS_TEXT, spark=spark_points
    )
    return env


def html(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def page(
    request: web.Request,
    viewer: Viewer | None,
    template: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> web.Response:
    """A page as a response: the whole document, or its ``partial`` block for htmx."""
    tpl = environment().get_template(template)
    values = {"viewer": viewer, "request_path": request.path, "theme": theme_of(request), **context}
    if is_htmx(request) and "partial" in tpl.blocks:
        ctx = tpl.new_context(values)
        text = "".join(tpl.blocks["partial"](ctx))
    else:
        text = tpl.render(**values)
    return web.Response(
        text=text,
        status=status,
        content_type="text/html",
        charset="utf-8",
        headers={**SECURITY, **(headers or {})},
    )
