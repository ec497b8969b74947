"""UptimeRobot's API listings as our file format (issue 31, item 4).

Sources are the JSON answers of its API, one or more files given together, told apart by shape:
v2 ``POST /v2/getMonitors`` (``{"stat": "ok", "monitors": [...]}``, snake_case, integer enums:
type 1 HTTP(s), 2 keyword, 3 ping, 4 port, 5 heartbeat), v2 ``/v2/getAlertContacts``
(``{"stat": "ok", "alert_contacts": [...]}``), v3 ``GET /v3/monitors`` (``{"data": [...]}``,
camelCase, string enums), v3 ``GET /v3/integrations`` (``{"data": [...]}`` too: told from monitors
by having no ``url`` or ``interval``) and v3 ``GET /v3/user/alert-contacts`` (a bare list). v3
contacts carry their type by name or number (``Slack`` or 11) and map as v2's do, through
``uptimerobot_v3.py``'s translation into v2's shapes. Several files
merge: contacts from one, the monitors' links to them from another. Everything not carried over
is a report line.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from monitor.ascode.importers import Imported, SourceError, keyed
from monitor.ascode.importers.uptimerobot_v3 import METHODS, V3_READ, is_v3_contact, v2_shape, v3_contact

MIN_INTERVAL = 30
V2_TYPES = {1: "http", 2: "keyword", 3: "ping", 4: "port", 5: "heartbeat"}
# Port monitors' sub_type: the well-known port of each protocol (99: custom, the monitor's port).
SUB_PORTS = {1: 80, 2: 443, 3: 21, 4: 25, 5: 110, 6: 143}
# Alert contact types (v2 integers; 1-11 as the uptimerobot gem's constants.rb lists them, 16/18/23
# as the API page lists them) we have a channel kind for; the others are reported.
CONTACT_KINDS = {5: "webhook", 11: "slack", 16: "pagerduty", 18: "telegram", 23: "discord"}
CONTACT_NAMES = {1: "SMS", 2: "email", 3: "Twitter", 4: "Boxcar", 6: "Pushbullet", 7: "Zapier",
                 8: "pro SMS", 9: "Pushover", 10: "HipChat", 14: "voice call", 15: "Splunk",
                 17: "Opsgenie", 20: "MS Teams", 21: "Google Chat", 24: "Mattermost"}  # fmt: skip


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"{path}: not JSON ({exc})") from None
    if isinstance(data, list) and data and all(isinstance(c, dict) for c in data):
        data = {"data": data}  # v3's /user/alert-contacts answers the list itself
    if not isinstance(data, dict):
        raise SourceError(f"{path}: not an UptimeRobot API answer (a JSON object expected)")
    if data.get("stat") == "fail":
        raise SourceError(f"{path}: an API error answer, not a listing")
    kinds = [
        k for k in ("monitors", "alert_contacts", "data", "mwindows", "psps") if isinstance(data.get(k), list)
    ]
    if not kinds:
        raise SourceError(
            f"{path}: not an UptimeRobot listing "
            "(no 'monitors', 'alert_contacts', 'mwindows', 'psps' or 'data' list)"
        )
    for kind in kinds:
        if not all(isinstance(item, dict) for item in data[kind]):
            raise SourceError(f"{path}: '{kind}' holds something other than objects")
    return data


def convert(sources: list[Path]) -> Imported:
    out = Imported()
    contacts: list[dict[str, Any]] = []
    monitors: list[tuple[str, dict[str, Any]]] = []
    windows: list[dict[str, Any]] = []
    for path in sources:
        data = _read(path)
        contacts += data.get("alert_contacts") or []
        monitors += [("v2", m) for m in data.get("monitors") or []]
        v3 = data.get("data") or []
        contacts += [v3_contact(c) for c in v3 if is_v3_contact(c)]
        monitors += [("v3", m) for m in v3 if not is_v3_contact(m)]
        windows += data.get("mwindows") or []
        for psp in data.get("psps") or []:
            where = f"status page '{psp.get('friendly_name')}' (id {psp.get('id')})"
            out.drop(where, "psp", "status pages are not carried over: make one under status_pages")
    channel_of = _channels(out, contacts)
    keys_of = _monitors(out, monitors, channel_of)
    _maintenance(out, windows, monitors, keys_of)
    return out


# v2 monitor fields this mapping reads, and those that are state or statistics, not settings.
READ = {
    "id", "friendly_name", "url", "type", "sub_type", "port", "interval", "timeout", "status",
    "http_method", "http_username", "http_password", "http_auth_type", "custom_http_headers",
    "custom_http_statuses", "keyword_type", "keyword_value", "keyword_case_type", "alert_contacts",
    "mwindows", "post_value",
    "create_datetime", "logs", "response_times", "average_response_time", "all_time_uptime_ratio",
    "custom_uptime_ratio", "custom_uptime_ranges", "custom_down_durations", "ssl", "lastCheck",
}  # fmt: skip


def _others(out: Imported, where: str, m: dict[str, Any], read: set[str]) -> None:
    """Report each set field this mapping does not read (never a silent drop)."""
    for name, value in sorted(m.items()):
        if name not in read and value not in (None, "", [], {}, 0, False):
            out.drop(where, name, "not carried over (no setting of ours matches it)")


WEEKDAYS = {1: "MO", 2: "TU", 3: "WE", 4: "TH", 5: "FR", 6: "SA", 7: "SU"}


def _maintenance(
    out: Imported,
    windows: list[dict[str, Any]],
    monitors: list[tuple[str, dict[str, Any]]],
    keys_of: dict[str, str],
) -> None:
    """mwindows (type 1 once, 2 daily, 3 weekly, 4 monthly; ``value`` the days, 1 = Monday)
    as windows; the monitors that list a window's id in their ``mwindows`` are its monitors."""
    taken: set[str] = set()
    section: dict[str, Any] = {}
    for w in windows:
        wid, name = str(w.get("id")), str(w.get("friendly_name") or f"window {w.get('id')}")
        where = f"maintenance window '{name}' (id {wid})"
        duration, kind = _int(w.get("duration")) or 0, _int(w.get("type"))
        if duration < 1:
            out.drop(where, "duration", f"{w.get('duration')!r} is not a number of minutes")
            continue
        body: dict[str, Any] = {"name": name}
        start = str(w.get("start_time") or "")
        if kind == 1 and start.isdigit():
            begin = datetime.fromtimestamp(int(start), UTC)
            end = begin + timedelta(minutes=duration)
            body["once"] = {"from": begin.isoformat(), "to": end.isoformat()}
        elif kind in (2, 3, 4) and len(start) == 5 and start[2] == ":":
            days = [_int(d) for d in str(w.get("value") or "").split("-") if d.strip()]
            if kind == 2:
                rrule = "FREQ=DAILY"
            elif kind == 3 and days and all(d in WEEKDAYS for d in days):
                rrule = "FREQ=WEEKLY;BYDAY=" + ",".join(WEEKDAYS[d] for d in days if d)
            elif kind == 4 and days and all(d and 1 <= d <= 31 for d in days):
                rrule = "FREQ=MONTHLY;BYMONTHDAY=" + ",".join(str(d) for d in days)
            else:
                out.drop(where, "value", f"{w.get('value')!r} is not a list of days for type {kind}")
                continue
            body["recurring"] = {
                "rrule": rrule,
                "starts_at": f"2026-01-01T{start}",
                "duration_minutes": duration,
                "timezone": "UTC",
            }
            out.drop(where, "start_time", "read as UTC (UptimeRobot uses the account's zone): check it")
        else:
            out.drop(where, "type", f"type {w.get('type')!r} with start_time {start!r} is not understood")
            continue
        members = [
            keys_of[str(m.get("id"))]
            for _, m in monitors
            if str(m.get("id")) in keys_of
            and any(str(x.get("id") if isinstance(x, dict) else x) == wid for x in m.get("mwindows") or [])
        ]
        if not members:
            out.drop(where, "monitors", "no monitor listed it: it would hold every monitor, so left out")
            continue
        body["monitors"] = members
        section[keyed(name, taken)] = body
    if section:
        out.document["maintenance"] = section


def _channels(out: Imported, contacts: list[dict[str, Any]]) -> dict[str, str]:
    taken: set[str] = set()
    section: dict[str, Any] = {}
    channel_of: dict[str, str] = {}
    for c in contacts:
        cid, kind_no, value = str(c.get("id")), c.get("type"), str(c.get("value") or "")
        name = str(c.get("friendly_name") or f"contact {cid}")
        where = f"alert contact '{name}' (id {cid})"
        kind = CONTACT_KINDS.get(kind_no)  # type: ignore[arg-type]
        if kind is None:
            what = CONTACT_NAMES.get(kind_no, f"type {kind_no}")  # type: ignore[arg-type]
            reason = (
                "our email channel needs an SMTP server: make an email channel with to: [" + value + "]"
                if kind_no == 2
                else f"{what} contacts have no channel kind here"
            )
            out.drop(where, "type", reason)
            continue
        var = f"UPTIMEROBOT_CONTACT_{cid}"
        if kind == "webhook":
            config: dict[str, Any] = {"url": out.secret(var + "_URL", value)}
        elif kind in ("slack", "discord"):
            config = {"url": out.secret(var + "_URL", value)}
        elif kind == "pagerduty":
            config = {"routing_key": out.secret(var + "_ROUTING_KEY", value)}
            if not re.fullmatch(r"[A-Za-z0-9]{32}", value):
                # Carried over (the user sets it in the secrets file), but apply would refuse it as it is.
                out.drop(where, "value", "not a 32-character Events API v2 integration key, as ours must be: "
                         f"set {var}_ROUTING_KEY to the service's key")  # fmt: skip
        else:  # telegram: UptimeRobot's value is its own bot link, not a chat id we can use
            out.drop(where, "value", "UptimeRobot's Telegram link is not a chat id: set chat_id by hand")
            continue
        key = keyed(name, taken)
        section[key] = {"kind": kind, "name": name, "config": config}
        channel_of[cid] = key
        if c.get("status") == 1:
            out.drop(where, "status", "the contact was not activated (paused) in UptimeRobot")
    if section:
        out.document["channels"] = section
    return channel_of


def _monitors(
    out: Imported, monitors: list[tuple[str, dict[str, Any]]], channel_of: dict[str, str]
) -> dict[str, str]:
    """The monitors section; answers each source id's key (for maintenance windows)."""
    taken: set[str] = set()
    section: dict[str, Any] = {}
    keys_of: dict[str, str] = {}
    for version, m in monitors:
        src = m if version == "v2" else v2_shape(m)
        name = str(src.get("friendly_name") or f"monitor {src.get('id')}")
        where = f"monitor '{name}' (id {src.get('id')})"
        body = _monitor(out, where, src, channel_of)
        _others(out, where, m, READ if version == "v2" else V3_READ)
        if body is not None:
            key = keyed(name, taken)
            section[key] = {"name": name, **body}
            keys_of[str(src.get("id"))] = key
    if section:
        out.document["monitors"] = section
    return keys_of


def _monitor(
    out: Imported, where: str, m: dict[str, Any], channel_of: dict[str, str]
) -> dict[str, Any] | None:
    kind = V2_TYPES.get(m.get("type"))  # type: ignore[arg-type]
    if kind is None:
        out.drop(where, "type", f"monitor type {m.get('type')!r} has no check type here")
        return None
    body: dict[str, Any] = {}
    url = str(m.get("url") or "")
    if kind in ("http", "keyword"):
        body = {"type": "http", "url": url}
        _http(out, where, m, body)
        if kind == "keyword" and m.get("keyword_value"):
            body["assertions"] = [
                {
                    "type": "keyword",
                    "keyword": str(m["keyword_value"]),
                    # keyword_type says when UptimeRobot alerts: 1 when the keyword is found
                    # (our keyword must be absent), 2 when it is not (it must be there).
                    "absent": _int(m.get("keyword_type")) == 1,
                    "case_sensitive": _int(m.get("keyword_case_type")) != 1,  # 0 (default) sensitive, 1 not
                }
            ]
    elif kind == "ping":
        body = {"type": "ping", "host": url}
    elif kind == "port":
        sub = _int(m.get("sub_type"))
        port = SUB_PORTS.get(sub) if sub is not None else None
        port = port or _int(m.get("port"))
        if not port or not 1 <= port <= 65535:
            out.drop(
                where, "port", f"no usable port (sub_type {m.get('sub_type')!r}, port {m.get('port')!r})"
            )
            return None
        body = {"type": "tcp", "host": url, "port": port}
    else:  # heartbeat: a ping expected every interval, as here
        body = {"type": "heartbeat"}
        out.drop(where, "url", "the job must ping this monitor's new ping_url (shown once applied)")
    interval = _int(m.get("interval"))
    if interval is not None:
        if interval < MIN_INTERVAL:
            out.drop(where, "interval", f"{interval} s raised to {MIN_INTERVAL} s, the shortest here")
            interval = MIN_INTERVAL
        if interval > 86400:
            out.drop(where, "interval", f"{interval} s lowered to 86400 s, the longest here")
        body["interval_seconds"] = min(interval, 86400)
        timeout = _int(m.get("timeout"))
        if timeout and kind != "heartbeat":
            if timeout > body["interval_seconds"]:
                out.drop(
                    where, "timeout", f"{timeout} s lowered to the interval, {body['interval_seconds']} s"
                )
            body["timeout_seconds"] = min(timeout, body["interval_seconds"])
    if m.get("status") == 0:
        body["paused"] = True
    _links(out, where, m, channel_of, body)
    return body


def _http(out: Imported, where: str, m: dict[str, Any], body: dict[str, Any]) -> None:
    method = METHODS.get(_int(m.get("http_method")) or 2)
    if method and method != "GET":
        body["method"] = method
    user, password = m.get("http_username"), m.get("http_password")
    if user or password:
        if m.get("http_auth_type") == 2:
            out.drop(where, "http_auth_type", "digest authentication is not supported here")
        else:
            var = f"UPTIMEROBOT_MONITOR_{m.get('id')}_PASSWORD"
            body["auth"] = {
                "type": "basic",
                "username": str(user or ""),
                "password": out.secret(var, str(password or "")),
            }
    if m.get("follow_redirects"):
        body["follow_redirects"] = True
    headers = m.get("custom_http_headers")
    if isinstance(headers, dict) and headers:
        body["headers"] = {str(k): str(v) for k, v in headers.items()}
    statuses = str(m.get("custom_http_statuses") or "")
    if statuses:
        ups = []
        for part in statuses.split("_"):
            code, _, up = part.partition(":")
            if code.isdigit() and up == "1":
                ups.append(int(code))
            elif code.isdigit() and up == "0":
                continue  # down statuses are down already unless listed as up
            else:
                out.drop(where, "custom_http_statuses", f"{part!r} is not code:0/1")
        if ups:
            body["expected_status"] = ["2xx", "3xx", *ups]
    if m.get("post_value"):
        out.drop(where, "post_value", "the request body is not carried over: set body by hand")


def _links(
    out: Imported, where: str, m: dict[str, Any], channel_of: dict[str, str], body: dict[str, Any]
) -> None:
    keys: list[str] = []
    for link in m.get("alert_contacts") or []:
        cid = str(link.get("id"))
        if cid not in channel_of:
            out.drop(
                where,
                f"alert contact {cid}",
                "no channel made for it (see above, or its listing was not given)",
            )
            continue
        keys.append(channel_of[cid])
        threshold, recurrence = _int(link.get("threshold")) or 0, _int(link.get("recurrence")) or 0
        if threshold:
            out.drop(
                where,
                f"alert contact {cid} threshold",
                f"{threshold} min delay: our delay is confirm_after checks",
            )
        if recurrence and "remind_every_minutes" not in body:
            if recurrence > 10080:
                out.drop(
                    where, f"alert contact {cid} recurrence", f"{recurrence} min lowered to 10080 (a week)"
                )
            body["remind_every_minutes"] = min(recurrence, 10080)
    if keys:
        body["channels"] = sorted(set(keys))


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
