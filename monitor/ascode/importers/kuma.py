"""Uptime Kuma's SQLite database (``kuma.db``) as our file format (issue 31, item 4).

Kuma keeps everything in one SQLite file: monitors (one wide table, one column per setting of
every type), notifications (a JSON ``config`` per provider), tags, maintenance and status pages.
The file is opened read-only; 1.23.x and 2.x are told apart by the columns present (``PRAGMA
table_info``: 2.0 added ``conditions``, ``json_path_operator``, ``bearer_token``... and renamed
the status page's ``google_analytics_tag_id`` to ``analytics_id``), and every column is read by
name, so a column a version lacks reads as unset. This module maps monitors and tags; channels
are ``kuma_notifications``'s, maintenance and status pages ``kuma_pages``'s. Everything set in
the source and not carried over is a report line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from monitor.ascode.importers import Imported, SourceError, keyed
from monitor.ascode.importers.kuma_db import Db, Row, days_of, integer, number, parsed, read, variable
from monitor.checks import REGISTRY
from monitor.checks.http_stored import is_secret_header
from monitor.domain.schemas.monitors import MAX_INTERVAL_SECONDS, MAX_TIMEOUT_SECONDS

MIN_INTERVAL = 30
HTTP_TYPES = ("http", "keyword", "json-query")
OURS = {"http": "http", "keyword": "http", "json-query": "http", "port": "tcp", "ping": "ping",
        "dns": "dns", "push": "heartbeat", "real-browser": "browser"}  # fmt: skip
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
CONTENT_TYPES = {
    "json": "application/json",
    "form": "application/x-www-form-urlencoded",
    "xml": "application/xml",
}
DNS_TYPES = ("A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA", "CAA", "SRV")
JSON_OPS = ("==", "!=", "<", "<=", ">", ">=", "contains")
_SIMPLE_PATH = re.compile(r"^\$?\.?([A-Za-z_][A-Za-z0-9_]*|\[\d+\])(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$")
_TAG_CHARS = re.compile(r"[^A-Za-z0-9_.:-]+")

# Monitor columns read by this mapping, or state and bookkeeping rather than settings.
READ = {
    "id", "name", "active", "type", "interval", "url", "hostname", "port", "keyword", "invert_keyword",
    "maxretries", "retry_interval", "resend_interval", "ignore_tls", "upside_down", "maxredirects",
    "accepted_statuscodes_json", "dns_resolve_type", "dns_resolve_server", "method", "body", "headers",
    "basic_auth_user", "basic_auth_pass", "auth_method", "bearer_token", "expiry_notification",
    "timeout", "json_path", "expected_value", "json_path_operator", "http_body_encoding", "parent",
    "push_token", "packet_size", "ping_count", "description", "remote_browser", "smtp_security",
    "conditions", "user_id", "weight", "created_date", "dns_last_result", "last_start_date",
}  # fmt: skip

# Columns of other types' settings whose default (as the migrations define it) says nothing.
DEFAULTS: dict[str, Any] = {
    "kafka_producer_ssl": 0, "kafka_producer_allow_auto_topic_creation": 0, "grpc_enable_tls": 0,
    "mqtt_check_type": "keyword", "snmp_version": "2c", "ws_ignore_sec_websocket_accept_header": 0,
    "ws_subprotocol": "", "ping_numeric": 1, "ping_per_request_timeout": 2, "save_response": 0,
    "save_error_response": 1, "response_max_length": 1024,
    "gamedig_given_port_only": 1, "cache_bust": 0, "retry_only_on_status_code_failure": 0,
    "ntp_root_dispersion_threshold": 500, "ntp_stratum_threshold": 5, "ntp_time_offset_threshold": 1000,
    "screenshot_delay": 0,
}  # fmt: skip


def convert(sources: list[Path]) -> Imported:
    from monitor.ascode.importers import kuma_notifications, kuma_pages

    if len(sources) != 1:
        names = ", ".join(str(p) for p in sources)
        raise SourceError(f"{names}: one kuma.db at a time (import each into its own file)")
    out = Imported()
    db = read(sources[0])
    channel_of = kuma_notifications.channels(out, db)
    keys_of = monitors(out, db, channel_of)
    kuma_pages.maintenance(out, db, keys_of)
    kuma_pages.status_pages(out, db, keys_of)
    return out


def where_monitor(m: Row) -> str:
    return f"monitor '{m.get('name')}' (id {m.get('id')})"


def monitors(out: Imported, db: Db, channel_of: dict[int, str]) -> dict[int, str]:
    """The monitors section; answers each Kuma monitor id's key (maintenance, status pages)."""
    rows = db.rows("monitor")
    tags = _tags(out, db)
    groups = {m["id"]: m for m in rows if m.get("type") == "group"}
    links: dict[int, list[str]] = {}
    unmade: dict[int, list[int]] = {}
    for link in db.rows("monitor_notification"):
        key = channel_of.get(link.get("notification_id"))  # type: ignore[arg-type]
        if key is not None:
            links.setdefault(link["monitor_id"], []).append(key)
        else:
            unmade.setdefault(link["monitor_id"], []).append(link.get("notification_id"))  # type: ignore[arg-type]
    taken: set[str] = set()
    section: dict[str, Any] = {}
    keys_of: dict[int, str] = {}
    for m in rows:
        where = where_monitor(m)
        if m.get("type") == "group":
            members = sum(1 for c in rows if c.get("parent") == m["id"])
            out.drop(where, "type", f"group monitors have no type here: its {members} member(s) "
                     f"carry the tag {_group_tag(m)!r} instead")  # fmt: skip
            continue
        body = monitor(out, db, m)
        if body is None:
            continue
        own = list(tags.get(m["id"], []))
        parent = groups.get(m.get("parent"))
        if parent is not None:
            own.append(_group_tag(parent))
        own = sorted(set(own))
        if len(own) > 20:
            out.drop(where, "tags", f"{len(own)} tags: the first 20 kept ({', '.join(own[20:])} not)")
        if own:
            body["tags"] = own[:20]
        for nid in unmade.get(m["id"], []):
            out.drop(where, f"notification {nid}", "no channel made for it (see its line)")
        if links.get(m["id"]):
            body["channels"] = sorted(set(links[m["id"]]))[:20]
        name = str(m.get("name") or f"monitor {m['id']}")
        key = keyed(name, taken)
        section[key] = {"name": name, **body}
        keys_of[m["id"]] = key
    if section:
        out.document["monitors"] = section
    return keys_of


def monitor(out: Imported, db: Db, m: Row) -> dict[str, Any] | None:
    """One Kuma monitor as our monitor's body (None, reported, when we have no such type)."""
    where, kind = where_monitor(m), str(m.get("type") or "")
    ours = OURS.get(kind)
    if ours is None:
        out.drop(where, "type", f"{kind!r} monitors have no check type here")
        return None
    body: dict[str, Any] = {"type": ours}
    host = str(m.get("hostname") or "").strip()
    if kind in HTTP_TYPES:
        _http(out, db, where, m, body)
    elif kind == "port":
        port = integer(m.get("port"))
        if not host or not port or not 1 <= port <= 65535:
            out.drop(where, "hostname", f"no usable host and port ({host!r}, {m.get('port')!r})")
            return None
        body.update(host=host, port=port)
        if m.get("smtp_security") == "secure":
            body["tls"] = True
        elif m.get("smtp_security") not in (None, "", "nostarttls"):
            out.drop(where, "smtp_security", f"{m['smtp_security']!r}: a tcp check here has no STARTTLS")
    elif kind == "ping":
        if not host:
            out.drop(where, "hostname", "no host to ping")
            return None
        body["host"] = host
        count = integer(m.get("ping_count"))
        if count and count > 1:
            body["count"] = min(count, 10)
        if integer(m.get("packet_size")) not in (None, 56):
            out.drop(where, "packet_size", f"{m['packet_size']} bytes: our pings are of the default size")
    elif kind == "dns" and not _dns(out, where, m, body, host):
        return None
    elif kind == "push":
        out.drop(where, "push_token", "the job must push to this monitor's new ping_url (shown once applied)")
    elif kind == "real-browser":
        if not m.get("url"):
            out.drop(where, "url", "no URL to open")
            return None
        body["url"] = str(m["url"])
        if m.get("remote_browser"):
            out.drop(where, "remote_browser", "ours runs the browser itself: no remote browsers")
    _schedule(out, where, m, body, ours)
    _alerting(out, db, where, m, body)
    _others(out, where, m, kind)
    return body


def _schedule(out: Imported, where: str, m: Row, body: dict[str, Any], ours: str) -> None:
    floor = max(MIN_INTERVAL, int(REGISTRY.get(ours).min_interval_seconds))
    interval = integer(m.get("interval")) or 60
    if interval < floor:
        out.drop(where, "interval", f"{interval} s raised to {floor} s, the shortest here for {ours}")
    elif interval > MAX_INTERVAL_SECONDS:
        out.drop(where, "interval", f"{interval} s lowered to {MAX_INTERVAL_SECONDS} s, the longest here")
    interval = min(max(interval, floor), MAX_INTERVAL_SECONDS)
    body["interval_seconds"] = interval
    timeout = number(m.get("timeout"))
    if ours != "heartbeat" and timeout and timeout > 0:
        limit = min(interval, MAX_TIMEOUT_SECONDS)
        if timeout > limit:
            out.drop(where, "timeout", f"{timeout:g} s lowered to {limit} s")
        body["timeout_seconds"] = min(timeout, limit)
    if not m.get("active"):
        body["paused"] = True


def _alerting(out: Imported, db: Db, where: str, m: Row, body: dict[str, Any]) -> None:
    retries = integer(m.get("maxretries")) or 0
    body["confirm_after"] = min(retries + 1, 10)
    if retries + 1 > 10:
        out.drop(where, "maxretries", f"{retries} retries: at most 10 failed checks in a row here")
    retry = integer(m.get("retry_interval")) or 0
    if retries and retry and retry != integer(m.get("interval")):
        out.drop(where, "retry_interval", f"{retry} s: retries here come at the monitor's interval")
    resend = integer(m.get("resend_interval")) or 0
    if resend:
        minutes = max(1, round(resend * body["interval_seconds"] / 60))
        body["remind_every_minutes"] = min(minutes, 10080)
    if m.get("upside_down"):
        body["paused"] = True
        out.drop(where, "upside_down", "no upside-down mode here: imported paused, so it does not alert "
                 "on the opposite of what it meant")  # fmt: skip
    if body["type"] in ("http", "browser") or body.get("tls"):
        if m.get("expiry_notification") in (0, False):
            body["cert_warn_days"] = 0
        elif m.get("expiry_notification"):
            days = days_of(db.setting("tlsExpiryNotifyDays"))
            if days:
                body["cert_warn_days"] = min(max(days), 365)


def _http(out: Imported, db: Db, where: str, m: Row, body: dict[str, Any]) -> None:
    body["url"] = str(m.get("url") or "")
    method = str(m.get("method") or "GET").upper()
    if method not in METHODS:
        out.drop(where, "method", f"{method!r} is not a method here (GET used)")
        method = "GET"
    if method != "GET":
        body["method"] = method
    text = m.get("body")
    if text:
        if method in ("GET", "HEAD"):
            out.drop(where, "body", f"a {method} request has no body here")
        else:
            body["body"] = str(text)
            encoding = str(m.get("http_body_encoding") or "json")
            body["content_type"] = CONTENT_TYPES.get(encoding, "application/json")
    _headers(out, where, m, body)
    _auth(out, where, m, body)
    statuses = parsed(m.get("accepted_statuscodes_json"), ["200-299"])
    if isinstance(statuses, list) and statuses:
        body["expected_status"] = [int(s) if str(s).isdigit() else str(s) for s in statuses][:20]
    redirects = integer(m.get("maxredirects"))
    if redirects is None or redirects > 0:
        body["follow_redirects"] = True
    if redirects not in (None, 0, 10):
        out.drop(where, "maxredirects", f"{redirects}: redirects are followed up to our own limit")
    if m.get("ignore_tls"):
        body["tls_verify"] = False
        out.drop(where, "ignore_tls", "written as tls_verify: false, which the server refuses unless "
                 "its operator sets MONITOR_ALLOW_INSECURE_TLS=true")  # fmt: skip
    if m.get("type") == "keyword" and m.get("keyword"):
        body["assertions"] = [{"type": "keyword", "keyword": str(m["keyword"]),
                               "absent": bool(m.get("invert_keyword")), "case_sensitive": True}]  # fmt: skip
    elif m.get("type") == "json-query":
        assertion = _json_query(out, db, where, m)
        if assertion:
            body["assertions"] = [assertion]


def _headers(out: Imported, where: str, m: Row, body: dict[str, Any]) -> None:
    raw = m.get("headers")
    if not raw or not str(raw).strip():
        return
    headers = parsed(raw, None)
    if not isinstance(headers, dict):
        out.drop(where, "headers", "not a JSON object of name: value")
        return
    mine: dict[str, str] = {}
    for name, value in headers.items():
        if is_secret_header(str(name)):
            var = variable("MONITOR", m["id"], "HEADER", name)
            mine[str(name)] = out.secret(var, str(value))
        else:
            mine[str(name)] = str(value)
    if mine:
        body["headers"] = mine


def _auth(out: Imported, where: str, m: Row, body: dict[str, Any]) -> None:
    """Basic or bearer authentication: the password or token a reference, the type and user
    name as they are (the API shows them too, and ``monitor export`` writes them so)."""
    method = m.get("auth_method") or ("basic" if m.get("basic_auth_user") else None)
    secret: tuple[str, Any] | None = None
    if method == "basic" and (m.get("basic_auth_user") or m.get("basic_auth_pass")):
        auth: dict[str, Any] = {"type": "basic", "username": m.get("basic_auth_user") or ""}
        secret = ("password", m.get("basic_auth_pass"))
    elif method == "bearer" and m.get("bearer_token"):
        auth, secret = {"type": "bearer"}, ("token", m["bearer_token"])
    if secret is not None:
        name, value = secret
        # An empty part (a user without a password) stays inline: a reference may not be empty.
        auth[name] = out.secret(variable("MONITOR", m["id"], "AUTH", name), str(value)) if value else ""
        body["auth"] = auth
    if method not in (None, "", "basic", "bearer"):
        out.drop(where, "auth_method", f"{method!r} authentication is not supported here")


def _json_query(out: Imported, db: Db, where: str, m: Row) -> dict[str, Any] | None:
    path = str(m.get("json_path") or "").strip()
    op = str(m.get("json_path_operator") or "==")
    expected = m.get("expected_value")
    if not _SIMPLE_PATH.match(path):
        out.drop(where, "json_path", f"JSONata {path!r} is not a plain path: only the status is checked")
        return None
    if op not in JSON_OPS:
        out.drop(where, "json_path_operator", f"{op!r} has no equivalent: only the status is checked")
        return None
    if expected is None:
        out.drop(where, "expected_value", "none given: only the status is checked")
        return None
    steps = path.lstrip("$").lstrip(".")
    jsonpath = "$" + ("" if steps.startswith("[") else ".") + steps
    value: Any = str(expected)
    if op in ("<", "<=", ">", ">="):
        limit = number(expected)
        if limit is None:
            out.drop(where, "expected_value", f"{expected!r} is not a number to compare with")
            return None
        value = int(limit) if limit.is_integer() else limit
    elif op in ("==", "!=") and str(expected) in ("true", "false"):
        value = str(expected) == "true"
    elif op in ("==", "!=") and number(expected) is not None:
        exact = float(str(expected))
        value = int(exact) if exact.is_integer() else exact
    return {"type": "json", "path": jsonpath, "op": op, "value": value}


def _dns(out: Imported, where: str, m: Row, body: dict[str, Any], host: str) -> bool:
    body["domain"] = host
    record = str(m.get("dns_resolve_type") or "A").upper()
    if record not in DNS_TYPES:
        out.drop(where, "dns_resolve_type", f"{record!r} records are not checked here: left out")
        return False
    body["record_type"] = record
    servers = [s.strip() for s in str(m.get("dns_resolve_server") or "").split(",") if s.strip()]
    port = integer(m.get("port"))
    if port and port != 53:
        servers = [f"[{s}]:{port}" if ":" in s else f"{s}:{port}" for s in servers]
    if len(servers) > 3:
        out.drop(where, "dns_resolve_server", f"at most 3 servers here ({', '.join(servers[3:])} not)")
    if servers:
        body["nameservers"] = servers[:3]
    return True


def _others(out: Imported, where: str, m: Row, kind: str) -> None:
    """Report each set column this mapping does not read (never a silent drop)."""
    if m.get("description"):
        out.drop(where, "description", "monitors have no description here")
    if str(m.get("conditions") or "[]").strip() not in ("[]", ""):
        out.drop(where, "conditions", "Kuma's conditions are not translated: add assertions by hand")
    if kind not in HTTP_TYPES and kind != "real-browser" and m.get("url") and m.get("url") != "https://":
        out.drop(where, "url", f"a {kind} monitor does not use it")
    for name, value in sorted(m.items()):
        if name not in READ and value not in (None, "", "[]", "{}", "null", DEFAULTS.get(name, 0)):
            out.drop(where, name, "not carried over (no setting of ours matches it)")


def _tags(out: Imported, db: Db) -> dict[int, list[str]]:
    """Each monitor's tags: ``name`` or ``name:value``, in our tag grammar."""
    names = {t["id"]: str(t.get("name") or "") for t in db.rows("tag")}
    monitors = {m["id"]: m for m in db.rows("monitor")}
    for t in db.rows("tag"):
        if t.get("color"):
            out.drop(f"tag '{t.get('name')}' (id {t['id']})", "color", "tags have no colour here")
    found: dict[int, list[str]] = {}
    for link in db.rows("monitor_tag"):
        name, value = names.get(link.get("tag_id"), ""), str(link.get("value") or "")
        text = f"{name}:{value}" if value else name
        tag = tag_of(text)
        where = where_monitor(monitors.get(link.get("monitor_id"), {"id": link.get("monitor_id")}))
        if tag is None:
            out.drop(where, f"tag {text!r}", "cannot be written as a tag here (letters, digits, _ . : -)")
            continue
        if tag != text:
            out.drop(where, f"tag {text!r}", f"written as {tag!r} (tags here: letters, digits, _ . : -)")
        found.setdefault(link["monitor_id"], []).append(tag)
    return found


def tag_of(text: str) -> str | None:
    """``text`` in our tag grammar (``^[A-Za-z0-9][A-Za-z0-9_.:-]{0,49}$``), or None."""
    tag = _TAG_CHARS.sub("-", text.strip()).strip("-_.:")[:50].rstrip("-_.:")
    return tag if tag and tag[0].isalnum() and tag.isascii() else None


def _group_tag(group: Row) -> str:
    return tag_of(f"group:{group.get('name')}") or f"group:{group['id']}"
