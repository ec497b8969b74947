"""Healthchecks (healthchecks.io or self-hosted) as our file format: each check a heartbeat.

Source: the JSON its Management API answers for ``GET /api/v3/checks/`` (``{"checks": [...]}``;
v1 and v2 answer the same shape, v1 without ``uuid``, a read-only key without ``uuid``,
``channels`` and the URLs), and optionally ``GET /api/v3/channels/`` (``{"channels": [...]}``),
given as further files. Fields as the peer's ``templates/docs/api.md`` and ``Check.to_dict``
(hc/api/models.py) give them: a simple check has ``timeout`` (its period), a cron or OnCalendar
check ``schedule`` and ``tz``; ``tags`` is one space-separated string; ``channels`` one
comma-separated string of integration UUIDs.

What maps: name, slug (or name) -> key, timeout -> interval_seconds (30 s to 1 day), grace ->
grace_seconds (at most 7 days), a 5-field cron -> cron + timezone, simple OnCalendar expressions
(``[Mon..Fri] *-*-* HH:MM[:SS]``, ``hourly``, ``daily``, ``weekly``, ``monthly``) -> cron, tags,
status ``paused`` -> paused, and integrations of a kind we have -> channels. The channel listing
carries only id, name and kind, never the integration's address or secret: each channel's
settings are ``${VAR}`` references (their values left empty, so ``monitor apply`` names each one
until it is filled in). Everything else is reported: desc, filters and keywords, methods,
manual_resume, and, for every check, that its job must be pointed at the new ping URL.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from monitor.ascode.importers import Imported, SourceError, keyed
from monitor.checks.heartbeat import MAX_GRACE_SECONDS
from monitor.maintenance import RuleError, parse_cron

# The API's limits (monitor/domain/schemas/: MAX_INTERVAL_SECONDS, the default minimum interval,
# TAG), kept here as the layers want (ascode sits below domain); a test holds them equal.
MIN_INTERVAL_SECONDS = 30
MAX_INTERVAL_SECONDS = 86_400
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,49}$")
MAX_TAGS = 20
MAX_CHANNELS = 20

# Their integration kind -> ours, and the settings each of ours needs that the listing lacks
# (field -> suffix of the variable that will hold it).
CHANNEL_KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "email": ("email", {"host": "SMTP_HOST", "from_address": "FROM", "to": "TO"}),
    "slack": ("slack", {"url": "URL"}),
    "discord": ("discord", {"url": "URL"}),
    "telegram": ("telegram", {"chat_id": "CHAT_ID"}),
    "webhook": ("webhook", {"url": "URL"}),
    "ntfy": ("ntfy", {"url": "URL"}),
    "pd": ("pagerduty", {"routing_key": "ROUTING_KEY"}),
}

_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_ONCALENDAR_SHORTHANDS = {
    "hourly": "0 * * * *",
    "daily": "0 0 * * *",
    "weekly": "0 0 * * 1",
    "monthly": "0 0 1 * *",
}
_ONCALENDAR = re.compile(
    r"^(?:(?P<dow>[A-Za-z]{3}(?:(?:\.\.|,)[A-Za-z]{3})*)\s+)?\*-\*-\*\s+"
    r"(?P<h>\d{1,2}):(?P<m>\d{1,2})(?::0{1,2})?$"
)


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot be read: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "give the answer of GET /api/v3/checks/ or /api/v3/channels/"
        ) from None


def _listing(path: Path, data: Any, name: str) -> list[dict[str, Any]]:
    items = data.get(name)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise SourceError(f"{path}: '{name}' is not a list of objects")
    return items


def oncalendar_to_cron(expression: str) -> str | None:
    """The 5-field cron of a simple OnCalendar expression, or None where ours cannot say it."""
    text = " ".join(expression.split())
    if text.lower() in _ONCALENDAR_SHORTHANDS:
        return _ONCALENDAR_SHORTHANDS[text.lower()]
    match = _ONCALENDAR.match(text)
    if match is None:
        return None
    hour, minute = int(match["h"]), int(match["m"])
    if hour > 23 or minute > 59:
        return None
    dow = "*"
    if match["dow"]:
        parts = []
        for part in re.split(r",", match["dow"].lower()):
            ends = part.split("..")
            if any(end not in _DAYS for end in ends) or len(ends) > 2:
                return None
            parts.append("-".join(str(_DAYS.index(end)) for end in ends))
        dow = ",".join(parts)
    return f"{minute} {hour} * * {dow}"


def _schedule(check: dict[str, Any], where: str, out: Imported) -> dict[str, Any]:
    """The heartbeat's schedule fields from a check's timeout, or schedule and tz."""
    fields: dict[str, Any] = {}
    schedule = check.get("schedule")
    if isinstance(schedule, str) and schedule.strip():
        tz = check.get("tz") if isinstance(check.get("tz"), str) and check.get("tz") else "UTC"
        cron: str | None = None
        if len(schedule.split()) == 5 and "\n" not in schedule.strip():
            try:
                cron = parse_cron(schedule)
            except RuleError as exc:
                out.drop(
                    where,
                    "schedule",
                    f"cron {schedule!r} is not one our cron can say ({exc}); set cron by hand",
                )
        else:
            cron = oncalendar_to_cron(schedule) if "\n" not in schedule.strip() else None
            if cron is None:
                out.drop(
                    where,
                    "schedule",
                    f"OnCalendar {schedule.strip()!r} has no 5-field cron equivalent we can write; "
                    "set cron by hand (the monitor expects a ping daily until then)",
                )
        if cron is not None:
            fields["cron"] = cron
            fields["timezone"] = tz
        else:
            fields["interval_seconds"] = MAX_INTERVAL_SECONDS
        return fields
    timeout = check.get("timeout")
    if isinstance(timeout, int) and not isinstance(timeout, bool):
        if timeout > MAX_INTERVAL_SECONDS:
            out.drop(where, "timeout", f"{timeout} s is above our longest period (86400 s): set to 86400 s")
            timeout = MAX_INTERVAL_SECONDS
        elif timeout < MIN_INTERVAL_SECONDS:
            out.drop(where, "timeout", f"{timeout} s is below our shortest period (30 s): set to 30 s")
            timeout = MIN_INTERVAL_SECONDS
        fields["interval_seconds"] = timeout
    else:
        out.drop(where, "timeout", "neither timeout nor schedule given: our default period (60 s) is used")
    return fields


def _grace(check: dict[str, Any], where: str, out: Imported) -> int | None:
    grace = check.get("grace")
    if not isinstance(grace, int) or isinstance(grace, bool):
        return None
    if grace > MAX_GRACE_SECONDS:
        out.drop(where, "grace", f"{grace} s is above our longest grace ({MAX_GRACE_SECONDS} s): set to that")
        return MAX_GRACE_SECONDS
    return max(grace, 1)


def _tags(check: dict[str, Any], where: str, out: Imported) -> list[str]:
    tags: list[str] = []
    for tag in str(check.get("tags") or "").split():
        if not TAG.match(tag):
            out.drop(where, "tags", f"tag {tag!r} is not valid here (letters, digits, _.:-, at most 50)")
        elif tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        out.drop(
            where, "tags", f"only the first {MAX_TAGS} of {len(tags)} tags kept: {' '.join(tags[MAX_TAGS:])}"
        )
        tags = tags[:MAX_TAGS]
    return tags


def _report_rest(check: dict[str, Any], where: str, out: Imported) -> None:
    """Report what a heartbeat of ours has no field for."""
    if check.get("desc"):
        out.drop(where, "desc", "we have no description field")
    if check.get("manual_resume"):
        out.drop(where, "manual_resume", "ours is up again with the next ping; there is no manual resume")
    if check.get("methods"):
        out.drop(where, "methods", f"only {check['methods']} pings were accepted; ours accepts GET and POST")
    filters = [
        name
        for name in ("filter_subject", "filter_body", "filter_http_body", "filter_default_fail")
        if check.get(name)
    ]
    if filters:
        out.drop(where, ", ".join(filters), "ours reads no keywords in a ping; use /start and /fail pings")
    keywords = [name for name in ("start_kw", "success_kw", "failure_kw") if check.get(name)]
    if keywords:
        out.drop(where, ", ".join(keywords), "ours reads no keywords in a ping; use /start and /fail pings")
    out.drop(where, "ping_url", "point the job at the new monitor's ping URL (shown after apply)")


def _var(key: str, suffix: str) -> str:
    return "HEALTHCHECKS_CHANNEL_" + re.sub(r"[^A-Z0-9]+", "_", key.upper()).strip("_") + "_" + suffix


def convert_channels(channels: list[dict[str, Any]], out: Imported) -> dict[str, str]:
    """Our channel of each integration of a kind we have (in ``out.document``); answers the
    integration's id -> our key."""
    section: dict[str, Any] = {}
    keys: dict[str, str] = {}
    taken: set[str] = set()
    for channel in channels:
        name = str(channel.get("name") or "").strip()
        kind = str(channel.get("kind") or "")
        ident = str(channel.get("id") or "")
        where = f"integration {name or kind!r} ({ident})"
        if kind not in CHANNEL_KINDS:
            out.drop(where, "kind", f"{kind!r} is a kind we do not have; checks using it lose it")
            continue
        ours, needed = CHANNEL_KINDS[kind]
        key = keyed(name or kind, taken)
        config: dict[str, Any] = {}
        refs = []
        for field, suffix in needed.items():
            ref = out.secret(_var(key, suffix), "")
            refs.append(ref[2:-1])
            config[field] = [ref] if field == "to" else ref
        section[key] = {"kind": ours, "name": (name or key)[:200], "config": config}
        out.drop(
            where,
            "settings",
            "the API does not give an integration's address or secret: fill in " + ", ".join(refs),
        )
        keys[ident] = key
    if section:
        out.document["channels"] = section
    return keys


def convert_check(
    check: dict[str, Any], key: str, channels: dict[str, str] | None, out: Imported
) -> dict[str, Any]:
    """Our heartbeat monitor of one check; what it cannot carry over goes to ``out``'s report."""
    name = str(check.get("name") or "").strip() or key
    where = f"check {name!r}"
    monitor: dict[str, Any] = {"type": "heartbeat", "name": name[:200]}
    monitor.update(_schedule(check, where, out))
    grace = _grace(check, where, out)
    if grace is not None:
        monitor["grace_seconds"] = grace
    if check.get("status") == "paused":
        monitor["paused"] = True
    tags = _tags(check, where, out)
    if tags:
        monitor["tags"] = tags
    codes = [code for code in str(check.get("channels") or "").split(",") if code.strip()]
    if codes and channels is None:
        out.drop(
            where,
            "channels",
            f"{len(codes)} integration(s): give the channel listing (GET /api/v3/channels/) too",
        )
    elif codes and channels is not None:
        mine = [channels[code.strip()] for code in codes if code.strip() in channels]
        if len(mine) < len(codes):
            out.drop(
                where,
                "channels",
                f"{len(codes) - len(mine)} integration(s) of kinds we do not have or not listed",
            )
        if len(mine) > MAX_CHANNELS:
            out.drop(where, "channels", f"only the first {MAX_CHANNELS} of {len(mine)} kept")
            mine = mine[:MAX_CHANNELS]
        if mine:
            monitor["channels"] = mine
    _report_rest(check, where, out)
    return monitor


def convert(sources: list[Path]) -> Imported:
    out = Imported()
    checks: list[dict[str, Any]] | None = None
    channels: list[dict[str, Any]] | None = None
    for path in sources:
        data = _load(path)
        if isinstance(data, dict) and "checks" in data:
            if checks is not None:
                raise SourceError(f"{path}: a second check listing; give one")
            checks = _listing(path, data, "checks")
        elif isinstance(data, dict) and "channels" in data:
            if channels is not None:
                raise SourceError(f"{path}: a second channel listing; give one")
            channels = _listing(path, data, "channels")
        else:
            raise SourceError(
                f"{path}: not a Healthchecks listing: expected an object with 'checks' "
                "(GET /api/v3/checks/) or 'channels' (GET /api/v3/channels/)"
            )
    if checks is None:
        raise SourceError(f"{sources[0]}: no check listing given (the answer of GET /api/v3/checks/)")
    if any("channels" not in check and "unique_key" in check for check in checks):
        out.drop(
            "check listing",
            "channels",
            "made with a read-only API key, it names no check's integrations; "
            "list the checks with a read-write key to carry them over",
        )
    keys = convert_channels(channels, out) if channels is not None else None
    monitors: dict[str, Any] = {}
    taken: set[str] = set()
    for check in checks:
        name = str(check.get("name") or "").strip()
        slug = str(check.get("slug") or "").strip()
        key = keyed(slug or name or "check", taken)
        monitors[key] = convert_check(check, key, keys, out)
    # Channels first, as docs/config-as-code.md orders the sections.
    out.document = {"version": 1, **out.document, "monitors": monitors}
    return out
