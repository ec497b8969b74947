"""Uptime Kuma's maintenance and status pages as ours (``kuma.py`` reads the database).

Maintenance (1.23 and 2.x, ``server/model/maintenance.js``): a ``strategy`` of ``manual`` (on
while its ``active`` flag is, no schedule: reported), ``single`` (``start_date`` to ``end_date``
on the clock of ``timezone``), ``recurring-interval`` (every ``interval_day`` days),
``recurring-weekday`` (``weekdays``, 0 = Sunday), ``recurring-day-of-month`` (``days_of_month``,
``lastDay1`` the last day), each from ``start_time`` to ``end_time``, and ``cron`` (with
``duration`` in seconds). They become ``once`` or an RRULE / cron ``recurring`` window on the
monitors ``monitor_maintenance`` names. Status pages: ``status_page`` with its ``group`` rows
and their ``monitor_group`` members, in Kuma's order; its look (theme, CSS, footer, analytics)
is reported.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from monitor.ascode.importers import Imported, keyed
from monitor.ascode.importers.kuma_db import Db, Row, integer, parsed
from monitor.domain.schemas.maintenance import MAX_DURATION_MINUTES

BYDAY = ("SU", "MO", "TU", "WE", "TH", "FR", "SA", "SU")  # Kuma's (croner's) 0 and 7: Sunday
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::\d{2})?$")
_SLUG = re.compile(r"^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")


def maintenance(out: Imported, db: Db, keys_of: dict[int, str]) -> None:
    members: dict[int, list[str]] = {}
    for link in db.rows("monitor_maintenance"):
        key = keys_of.get(link.get("monitor_id"))  # type: ignore[arg-type]
        if key is not None:
            members.setdefault(link["maintenance_id"], []).append(key)
    pages = {link.get("maintenance_id") for link in db.rows("maintenance_status_page")}
    taken: set[str] = set()
    section: dict[str, Any] = {}
    for w in db.rows("maintenance"):
        name = str(w.get("title") or f"maintenance {w['id']}")
        where = f"maintenance '{name}' (id {w['id']})"
        if not w.get("active"):
            out.drop(where, "active", "paused in Kuma: left out (make it again when it is wanted)")
            continue
        schedule = _schedule(out, db, where, w)
        if schedule is None:
            continue
        if w.get("description"):
            out.drop(where, "description", "windows have no description here")
        if w["id"] in pages:
            out.drop(where, "status pages", "shown on the pages of its monitors here, not chosen per page")
        if not members.get(w["id"]):
            out.drop(where, "monitors", "no imported monitor in it: left out")
            continue
        section[keyed(name, taken)] = {"name": name, **schedule, "monitors": sorted(set(members[w["id"]]))}
    if section:
        out.document["maintenance"] = section


def _zone(out: Imported, db: Db, where: str, w: Row) -> tuple[str, ZoneInfo]:
    name = str(w.get("timezone") or "SAME_AS_SERVER")
    if name == "SAME_AS_SERVER":
        name = str(parsed(db.setting("serverTimezone"), None) or "UTC")
    try:
        return name, ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        out.drop(where, "timezone", f"{name!r} is not an IANA time zone: read as UTC")
        return "UTC", ZoneInfo("UTC")


def _schedule(out: Imported, db: Db, where: str, w: Row) -> dict[str, Any] | None:
    strategy = str(w.get("strategy") or "")
    if strategy == "manual":
        out.drop(where, "strategy", "manual maintenance has no schedule: left out (make a once window)")
        return None
    zone_name, zone = _zone(out, db, where, w)
    start, end = _date(w.get("start_date")), _date(w.get("end_date"))
    if strategy == "single":
        if start is None or end is None or end <= start:
            out.drop(where, "start_date", "a single window needs a start and a later end: left out")
            return None
        return {
            "once": {
                "from": start.replace(tzinfo=zone).isoformat(),
                "to": end.replace(tzinfo=zone).isoformat(),
            }
        }
    if strategy == "cron":
        minutes = (integer(w.get("duration")) or 0) // 60
        if not w.get("cron") or not 1 <= minutes <= MAX_DURATION_MINUTES:
            out.drop(where, "cron", f"cron {w.get('cron')!r} for {minutes} min cannot be carried over")
            return None
        if start or end:
            out.drop(where, "date range", "a cron window here has no date range: it recurs from now on")
        return {
            "recurring": {"cron": str(w["cron"]).strip(), "duration_minutes": minutes, "timezone": zone_name}
        }
    if not strategy.startswith("recurring-"):
        out.drop(where, "strategy", f"{strategy!r} is not a strategy this importer knows: left out")
        return None
    begin, finish = _clock(w.get("start_time")), _clock(w.get("end_time"))
    if begin is None or finish is None:
        out.drop(where, "start_time", f"{w.get('start_time')!r} to {w.get('end_time')!r} is not a time range")
        return None
    minutes = (finish - begin) % (24 * 60) or 24 * 60
    rule = _rule(out, where, w, strategy)
    if rule is None:
        return None
    if end is not None:
        rule += ";UNTIL=" + end.strftime("%Y%m%dT%H%M%S")
    day = (start or datetime(2026, 1, 1)).date()
    starts = f"{day.isoformat()}T{begin // 60:02d}:{begin % 60:02d}"
    return {
        "recurring": {"rrule": rule, "starts_at": starts, "duration_minutes": minutes, "timezone": zone_name}
    }


def _rule(out: Imported, where: str, w: Row, strategy: str) -> str | None:
    if strategy == "recurring-interval":
        every = integer(w.get("interval_day")) or 1
        return "FREQ=DAILY" + (f";INTERVAL={every}" if every > 1 else "")
    if strategy == "recurring-weekday":
        days = parsed(w.get("weekdays"), [])
        weekdays = [d for d in days if isinstance(d, int) and 0 <= d <= 7] if isinstance(days, list) else []
        if not weekdays:
            out.drop(where, "weekdays", f"{w.get('weekdays')!r}: no weekday picked: left out")
            return None
        order = {d: i for i, d in enumerate(BYDAY[1:])}
        return "FREQ=WEEKLY;BYDAY=" + ",".join(sorted({BYDAY[d] for d in weekdays}, key=order.__getitem__))
    if strategy == "recurring-day-of-month":
        days = parsed(w.get("days_of_month"), [])
        picked: list[int] = []
        for d in days if isinstance(days, list) else []:
            if d == "lastDay1":
                picked.append(-1)
            elif isinstance(d, int) and 1 <= d <= 31:
                picked.append(d)
            else:
                out.drop(where, "days_of_month", f"{d!r} is not carried over (Kuma itself skips it)")
        if not picked:
            out.drop(where, "days_of_month", "no day of the month picked: left out")
            return None
        return "FREQ=MONTHLY;BYMONTHDAY=" + ",".join(
            str(d) for d in sorted(set(picked), key=lambda d: (d < 0, d))
        )
    out.drop(where, "strategy", f"{strategy!r} is not a strategy this importer knows: left out")
    return None


def status_pages(out: Imported, db: Db, keys_of: dict[int, str]) -> None:
    groups: dict[int, list[Row]] = {}
    for g in sorted(db.rows("group"), key=lambda g: (integer(g.get("weight")) or 0, g["id"])):
        if g.get("status_page_id") is not None:
            groups.setdefault(g["status_page_id"], []).append(g)
    members: dict[int, list[Row]] = {}
    for link in sorted(db.rows("monitor_group"), key=lambda x: (integer(x.get("weight")) or 0, x["id"])):
        members.setdefault(link["group_id"], []).append(link)
    domains: dict[int, list[str]] = {}
    for cname in db.rows("status_page_cname"):
        domains.setdefault(cname.get("status_page_id"), []).append(str(cname.get("domain")))  # type: ignore[arg-type]
    incidents = {i.get("status_page_id") for i in db.rows("incident")}
    taken: set[str] = set()
    section: dict[str, Any] = {}
    for page in db.rows("status_page"):
        where = f"status page '{page.get('title')}' (id {page['id']})"
        slug = str(page.get("slug") or "")
        if not _SLUG.match(slug):
            fixed = re.sub(r"[^a-z0-9]+", "-", slug.lower()).strip("-")[:64].strip("-")
            if not fixed:
                out.drop(where, "slug", f"{slug!r} cannot be a slug here: left out")
                continue
            out.drop(where, "slug", f"{slug!r} written as {fixed!r} (a-z, 0-9 and '-' here)")
            slug = fixed
        body: dict[str, Any] = {"slug": slug, "title": str(page.get("title") or slug)[:200]}
        if page.get("description"):
            body["description"] = str(page["description"])[:2000]
        icon = str(page.get("icon") or "")
        if icon.startswith("https://"):
            body["logo_url"] = icon
        elif icon and icon != "/icon.svg":
            out.drop(where, "icon", f"{icon!r} is a file of Kuma's: give logo_url an https:// address")
        names = domains.get(page["id"], [])
        if names:
            body["domain"] = names[0]
            for other in names[1:]:
                out.drop(where, "domain", f"{other!r}: one domain per page here")
        shown, sends = _groups(out, where, groups.get(page["id"], []), members, keys_of)
        if not shown:
            out.drop(where, "groups", "no group with an imported monitor: left out")
            continue
        body["groups"] = shown
        if True in sends:  # Kuma links each monitor with send_url; a page here shows all or none
            body["show_urls"] = True
            if False in sends:
                out.drop(where, "send_url", "set for some of its monitors: here every target is shown")
        _page_others(out, where, page, page["id"] in incidents)
        section[keyed(slug, taken)] = body
    if section:
        out.document["status_pages"] = section


def _groups(
    out: Imported, where: str, groups: list[Row], members: dict[int, list[Row]], keys_of: dict[int, str]
) -> tuple[list[dict[str, Any]], set[bool]]:
    """The page's groups (none when no group has an imported monitor), and the ``send_url``
    values of its monitors' links."""
    shown: list[dict[str, Any]] = []
    sends: set[bool] = set()
    for g in groups:
        keys: list[str] = []
        for link in members.get(g["id"], []):
            key = keys_of.get(link.get("monitor_id"))  # type: ignore[arg-type]
            if key is None:
                out.drop(
                    where, f"group '{g.get('name')}'", f"monitor id {link.get('monitor_id')} was not imported"
                )
                continue
            if key not in keys:
                keys.append(key)
            sends.add(bool(link.get("send_url")))
            if link.get("custom_url"):
                out.drop(
                    where, f"group '{g.get('name')}'", f"custom_url of {key}: the page links to the target"
                )
        if len(shown) == 20:
            out.drop(where, f"group '{g.get('name')}'", "at most 20 groups on a page here: left out")
            continue
        if len(keys) > 200:
            out.drop(where, f"group '{g.get('name')}'", f"{len(keys)} monitors: the first 200 kept")
        shown.append({"name": str(g.get("name") or "Services")[:200], "monitors": keys[:200]})
    if not any(group["monitors"] for group in shown):
        return [], set()
    return shown, sends


# Status page columns and the value that means "as Kuma's default", each other value reported.
PAGE_DEFAULTS: dict[str, Any] = {
    "theme": ("light", "auto", "", None), "published": (1, True), "search_engine_index": (1, True),
    "show_tags": (0, False, None), "password": ("", None), "footer_text": ("", None),
    "custom_css": ("", None), "show_powered_by": (1, True), "google_analytics_tag_id": ("", None),
    "analytics_id": ("", None), "analytics_type": ("", None), "analytics_script_url": ("", None),
    "show_certificate_expiry": (0, False, None), "auto_refresh_interval": (300, None),
    "show_only_last_heartbeat": (0, False, None), "rss_title": ("", None),
}  # fmt: skip


def _page_others(out: Imported, where: str, page: Row, incidents: bool) -> None:
    for column, defaults in PAGE_DEFAULTS.items():
        value = page.get(column)
        if column in page and value not in defaults:
            shown = "(set)" if column == "password" else repr(value)[:60]
            out.drop(where, column, f"{shown}: not carried over (no setting of ours matches it)")
    if incidents:
        out.drop(where, "incidents", "its incidents are history, not configuration: not carried over")


def _date(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "")).replace(tzinfo=None, microsecond=0)
    except ValueError:
        return None


def _clock(value: Any) -> int | None:
    """``HH:MM[:SS]`` as minutes after midnight."""
    found = _TIME.match(str(value or "").strip())
    if not found or int(found[1]) > 23 or int(found[2]) > 59:
        return None
    return int(found[1]) * 60 + int(found[2])
