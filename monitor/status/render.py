"""A status page's model (``view.build``) as HTML, JSON and Atom.

Jinja2 with autoescaping on for every template (HTML and the Atom feed's XML): a monitor
named ``<script>`` is text on the page. The HTML has no script and no inline style, so the
page's Content-Security-Policy can forbid both; the stylesheet and the default favicon are
static files (``assets``) whose URLs carry their hash, so they are cached for a year and
change with a new version.
"""

from __future__ import annotations

import functools
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import jinja2
from markupsafe import Markup, escape

from monitor import times
from monitor.status import assets, badges
from monitor.status.view import (
    DAYS,
    IMPACT_TEXT,
    NAMESPACE,
    OVERALL_TEXT,
    STATE_TEXT,
    STATUS_TEXT,
    duration_text,
    level,
    spark_points,
)

WINDOW_TEXT = {"24h": "24 h", "7d": "7 days", "30d": "30 days", "90d": "90 days"}


def _when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _iso(value: datetime | None) -> str:
    return "" if value is None else times.rfc3339(value)


@functools.lru_cache(maxsize=8192)
def _pct(percent: float | None) -> str:
    # Most days are 100 % or without data: their text is made once.
    return badges.uptime_badge(percent)[0]


def bars(days: list[dict[str, Any]]) -> Markup:
    """The ``<li>`` of each day's bar, with its tip (the day's uptime, incidents and
    downtime): the page's hottest loop (90 per monitor), written here rather than in the
    template, five times faster. A bar is a tab stop when its day had trouble."""
    out = []
    for d in days:
        percent, incidents, down = d["uptime_percent"], d["incidents"], d["downtime_seconds"]
        lv = level(percent)
        tip = f"{escape(d['date'])}: {_pct(percent)}"
        if percent is not None:
            tip += " up"
        if incidents:
            tip += f", {incidents} incident{'s' if incidents != 1 else ''}"
        if down:
            tip += f", {duration_text(down)} down"
        focus = ' tabindex="0"' if incidents or lv not in ("up", "nodata") else ""
        out.append(f'<li class="bar bar-{lv}"{focus}><span class="tip">{tip}</span></li>')
    return Markup("".join(out))


def incident_text(incident: dict[str, Any]) -> str:
    """What an incident was, after the monitor's name: an outage, or unavailable during
    maintenance (not downtime)."""
    if incident["kind"] == "maintenance":
        return "is in maintenance" if incident["ongoing"] else "was unavailable during maintenance"
    return "is down" if incident["ongoing"] else "was down"


def sanitised(update: dict[str, Any]) -> Markup:
    """An update's HTML, which ``view.post_of`` took from the sanitiser (``monitor/markdown.py``,
    made when the update was written or now): the only text a template writes unescaped."""
    return Markup(update["html"])


def last_update(post: dict[str, Any]) -> datetime:
    """When a post last said something: its newest update (a change of its title is not news)."""
    updates = post["updates"]
    return updates[0]["at"] if updates else post["created_at"]


def post_feed_html(post: dict[str, Any]) -> str:
    """A post's updates as the HTML of its Atom entry's content, newest first: a plain string,
    which the feed's template escapes into the XML as ``type="html"`` wants."""
    head = f"<p>Impact: {escape(IMPACT_TEXT[post['impact']])}</p>"
    parts = [
        f"<p><strong>{escape(STATE_TEXT[u['state']])}</strong> ({escape(_when(u['at']))})</p>{u['html']}"
        for u in post["updates"]
    ]
    return "".join([head, *parts])


def maintenance_feed_html(window: dict[str, Any]) -> str:
    """An announced window as the HTML of its Atom entry's content: its span, what it covers
    and its text's sanitised HTML (a plain string the feed's template escapes, as for posts)."""
    covers = f" ({escape(', '.join(window['monitors']))})" if window["monitors"] else ""
    head = f"<p>{escape(_when(window['from']))} to {escape(_when(window['to']))}{covers}</p>"
    return head + (window["html"] or "")


def notice_updated(window: dict[str, Any]) -> datetime:
    """When an announced occurrence last changed for a feed reader: it came on the page
    (``announced_at``), or later began to run (its entry's title says so from then)."""
    announced: datetime = window["announced_at"]
    return max(announced, window["from"]) if window["active"] else announced


def from_now(value: datetime, now: datetime) -> str:
    """How far ``value`` is from ``now``, as a visitor reads it: "in 3 h", "in 2 days", "now";
    "40 min ago" for a time past."""
    seconds = (value - now).total_seconds()
    if abs(seconds) < 60:
        return "now"
    text = _span_text(abs(seconds))
    return f"in {text}" if seconds > 0 else f"{text} ago"


def _span_text(seconds: float) -> str:
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("monitor.status", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=_when,
        iso=_iso,
        pct=_pct,
        ms=lambda v, checked=False: badges.latency_badge(v, checked)[0],
        dur=duration_text,
        from_now=from_now,
    )
    env.globals.update(
        level=level, spark=spark_points, bars=bars, status_text=STATUS_TEXT, overall_text=OVERALL_TEXT,
        window_text=WINDOW_TEXT, days=DAYS, incident_text=incident_text, markdown=sanitised,
        state_text=STATE_TEXT, impact_text=IMPACT_TEXT, last_update=last_update,
        post_feed_html=post_feed_html, maintenance_feed_html=maintenance_feed_html,
        notice_updated=notice_updated,
    )  # fmt: skip
    return env


ENV = _environment()
CSS_URL = assets.CSS.url
# The default icon of a page that names none: SVG, and ICO for browsers without SVG icons.
FAVICON_URL = assets.FAVICON_SVG.url
FAVICON_ICO_URL = assets.FAVICON_ICO.url


def html(model: dict[str, Any], base: str) -> str:
    """The page; ``base`` is its path (``/status/<slug>``), which the feeds' links extend."""
    maintenance = model["maintenance"]
    return ENV.get_template("page.html").render(
        page=model,
        base=base,
        css_url=CSS_URL,
        favicon_url=FAVICON_URL,
        favicon_ico_url=FAVICON_ICO_URL,
        active_maintenance=[m for m in maintenance if m["active"]],
        upcoming_maintenance=[m for m in maintenance if not m["active"]],
        current_posts=[p for p in model["posts"] if not p["resolved"]],
        past_posts=[p for p in model["posts"] if p["resolved"]],
    )


def post_html(page: dict[str, Any], post: dict[str, Any], base: str) -> str:
    """A post's permalink page; ``page`` holds the status page's title, logo and favicon."""
    return ENV.get_template("post.html").render(
        page=page, p=post, base=base, css_url=CSS_URL, favicon_url=FAVICON_URL,
        favicon_ico_url=FAVICON_ICO_URL,
    )  # fmt: skip


def atom(model: dict[str, Any], base: str, page_id: int) -> str:
    """Incident posts (one entry each, updated at its last update) and incidents as an Atom
    feed. Its links are ``base`` (the page's path: a reader resolves it against the feed's own
    address, whichever host that was read from); the ids are URNs that stay the same whatever
    the host: the page's, and each post's and incident's ``ref``."""
    times_seen = [i["ended_at"] or i["started_at"] for i in model["incidents"]]
    times_seen += [last_update(p) for p in model["posts"]]
    times_seen += [notice_updated(m) for m in model["maintenance"] if m["text"]]
    updated = max(times_seen, default=model["updated_at"])

    return ENV.get_template("feed.atom").render(
        page=model, base=base, updated=updated, feed_id=uuid.uuid5(NAMESPACE, str(page_id)).urn,
    )  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return times.rfc3339(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def as_json(model: dict[str, Any]) -> str:
    return json.dumps(model, default=_plain, ensure_ascii=False, separators=(",", ":"))
