"""Gatus's ``config.yaml`` as our file format (``monitor import gatus config.yaml``).

Gatus keeps everything in one YAML file (README.md of TwiN/gatus, "Configuration"): endpoints
with a URL whose scheme says the check, conditions such as ``[STATUS] == 200``, alerting
providers, one maintenance window and external (pushed) endpoints. Endpoints become monitors
(http, tcp, ping, dns, tls), conditions our http assertions where we have one, providers our
channels, the window a recurring maintenance, external endpoints heartbeats. Everything else
is reported through ``Imported.drop``: never a silent drop. ``${VAR}`` already in the file stay
as our references to the same variable; secret values written inline become ``${GATUS_...}``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from monitor.ascode.importers import Imported, SourceError, keyed
from monitor.ascode.importers.gatus_conditions import condition, duration_seconds

MIN_INTERVAL = 30
DEFAULT_INTERVAL = 60  # Gatus's default interval
_SENSITIVE = re.compile(r"auth|token|key|secret|pass|cookie|session", re.I)
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_DAYS = {
    "monday": "MO", "tuesday": "TU", "wednesday": "WE", "thursday": "TH",
    "friday": "FR", "saturday": "SA", "sunday": "SU",
}  # fmt: skip
_REPORTED_SCHEMES = ("starttls", "ssh", "ws", "wss", "udp", "grpc", "grpcs", "sctp")
ENDPOINT_KEYS = {
    "name", "group", "url", "method", "body", "headers", "interval", "conditions", "enabled",
    "client", "dns", "alerts", "maintenance-windows",
}  # fmt: skip


def _var(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Z0-9]+", "_", p.upper()).strip("_") for p in ("GATUS", *parts))


def _secret(out: Imported, variable: str, value: Any) -> str:
    """A secret's reference: an existing ``${VAR}`` kept as it is, a value kept under ``variable``."""
    text = str(value)
    if _REFERENCE.match(text):
        return text
    return out.secret(variable, text)


def _target(url: str, endpoint: dict[str, Any]) -> dict[str, Any] | str:
    """The check an endpoint's URL means: the monitor's type and fields, or why not."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if isinstance(endpoint.get("dns"), dict):
        dns = endpoint["dns"]
        fields: dict[str, Any] = {"type": "dns", "domain": str(dns.get("query-name", ""))}
        fields["record_type"] = str(dns.get("query-type", "A")).upper()
        server = rest if rest else url
        fields["nameservers"] = [server.split("/")[0]] if server else []
        return fields
    if scheme in ("http", "https"):
        return {"type": "http", "url": url}
    host, _, port = rest.split("/")[0].rpartition(":")
    if scheme in ("tcp", "tls"):
        if not host or not port.isdigit():
            return f"{scheme}:// needs host:port"
        return {"type": scheme, "host": host, "port": int(port)}
    if scheme == "icmp":
        return {"type": "ping", "host": rest.split("/")[0]}
    if scheme in _REPORTED_SCHEMES:
        return f"{scheme}:// checks have no equivalent type"
    return f"unknown scheme {scheme!r}"


def _interval(out: Imported, where: str, raw: Any) -> int:
    if raw is None:
        return DEFAULT_INTERVAL
    try:
        seconds = duration_seconds(raw)
    except ValueError:
        out.drop(where, "interval", f"{raw!r} is not a duration; 60 s used")
        return DEFAULT_INTERVAL
    if seconds < MIN_INTERVAL:
        out.drop(where, "interval", f"{raw} is below our minimum: raised to {MIN_INTERVAL} s")
        return MIN_INTERVAL
    return min(86400, math.ceil(seconds))


def _alerts(
    out: Imported,
    where: str,
    alerts: Any,
    channels: dict[str, Any],
    defaults: dict[str, Any],
    monitor: dict[str, Any],
) -> None:
    """Endpoint alerts: each type's channel, thresholds as confirm_after / recover_after."""
    seen: tuple[int, int] | None = None
    for alert in alerts or []:
        kind = str(alert.get("type", ""))
        merged = {**defaults.get(kind, {}), **alert}
        if merged.get("enabled", True) is False:
            out.drop(where, f"alerts[{kind}]", "disabled alert not carried over")
            continue
        if kind not in channels:
            out.drop(
                where, f"alerts[{kind}]", "no channel for this alert type (provider missing or not ours)"
            )
            continue
        if kind not in monitor["channels"]:
            monitor["channels"].append(kind)
        thresholds = (int(merged.get("failure-threshold", 3)), int(merged.get("success-threshold", 2)))
        if seen is not None and thresholds != seen:
            out.drop(
                where,
                f"alerts[{kind}]",
                f"thresholds {thresholds} differ from the first alert's; ours are per monitor",
            )
        elif seen is None:
            seen = thresholds
            monitor["confirm_after"] = max(1, min(10, thresholds[0]))
            monitor["recover_after"] = max(1, min(10, thresholds[1]))
        for setting in sorted(set(alert) - {"type", "enabled", "failure-threshold", "success-threshold"}):
            out.drop(where, f"alerts[{kind}].{setting}", "no per-alert equivalent")
    if not monitor["channels"]:
        del monitor["channels"]


def _endpoint(
    out: Imported, ep: dict[str, Any], channels: dict[str, Any], defaults: dict[str, Any], key: str
) -> dict[str, Any] | None:
    where = f"endpoint {ep.get('name')!r}"
    target = _target(str(ep.get("url", "")), ep)
    if isinstance(target, str):
        out.drop(where, "url", f"{target}: endpoint not carried over")
        return None
    kind = target["type"]
    monitor: dict[str, Any] = {"name": str(ep["name"]), **target}
    monitor["interval_seconds"] = _interval(out, where, ep.get("interval"))
    if ep.get("group"):
        tag = keyed(str(ep["group"]), set())
        monitor["tags"] = [tag]
    if ep.get("enabled") is False:
        monitor["paused"] = True
    for setting in sorted(set(ep) - ENDPOINT_KEYS):
        out.drop(where, setting, "no equivalent")
    client = ep.get("client") or {}
    for setting, value in client.items():
        if setting == "insecure" and kind == "http":
            monitor["tls_verify"] = not bool(value)
            if value:
                out.drop(
                    where,
                    "client.insecure",
                    "carried over as tls_verify: false, which the server takes "
                    "only with MONITOR_ALLOW_INSECURE_TLS=true",
                )
        else:
            out.drop(where, f"client.{setting}", "no equivalent")
    if kind == "http":
        if ep.get("method"):
            monitor["method"] = str(ep["method"]).upper()
        if ep.get("body"):
            monitor["body"] = str(ep["body"])
        headers = {}
        for name, value in (ep.get("headers") or {}).items():
            sensitive = _SENSITIVE.search(str(name))
            headers[str(name)] = (
                _secret(out, _var(key, "HEADER", str(name)), value) if sensitive else str(value)
            )
        if headers:
            monitor["headers"] = headers
    else:
        for setting in ("method", "body", "headers"):
            if ep.get(setting):
                out.drop(where, setting, f"a {kind} monitor sends no request")
    statuses: list[Any] = []
    assertions: list[dict[str, Any]] = []
    for text in ep.get("conditions") or []:
        got = condition(str(text), kind)
        if isinstance(got, str):
            out.drop(where, f"condition {text!r}", got)
            continue
        field, value = got
        if field == "expected_status":
            statuses.append(value)
        elif field == "assertion":
            assertions.append(value)
        elif field == "cert_warn_days":
            monitor["cert_warn_days"] = value
        elif field == "dns_value":
            monitor.setdefault("values", []).append(value)
            monitor["expect"] = "contains"
    if statuses:
        monitor["expected_status"] = statuses
    if assertions:
        monitor["assertions"] = assertions
    monitor["channels"] = []
    _alerts(out, where, ep.get("alerts"), channels, defaults, monitor)
    return monitor


def _channel(out: Imported, kind: str, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """A Gatus alerting provider as our channel (its key is the provider's name), or None."""
    where = f"alerting provider {kind!r}"
    used: set[str] = {"default-alert"}
    config: dict[str, Any]
    if kind in ("slack", "discord"):
        config = {"url": _secret(out, _var(kind, "WEBHOOK_URL"), cfg.get("webhook-url", ""))}
        used.add("webhook-url")
        ours = "slack" if kind == "slack" else "discord"
    elif kind == "telegram":
        config = {"chat_id": str(cfg.get("id", ""))}
        used |= {"id", "token"}
        out.drop(where, "token", "our Telegram bot is the server's (MONITOR_TELEGRAM_TOKEN), not a channel's")
        ours = "telegram"
    elif kind == "email":
        port = int(cfg.get("port", 587))
        to = [a.strip() for a in str(cfg.get("to", "")).split(",") if a.strip()]
        config = {
            "host": str(cfg.get("host", "")),
            "port": port,
            "from_address": str(cfg.get("from", "")),
            "to": to,
            "security": "tls" if port == 465 else "starttls",
        }
        if cfg.get("username"):
            config["username"] = str(cfg["username"])
        if cfg.get("password"):
            config["password"] = _secret(out, _var("EMAIL", "PASSWORD"), cfg["password"])
        used |= {"host", "port", "from", "to", "username", "password"}
        ours = "email"
    elif kind == "pagerduty":
        config = {
            "routing_key": _secret(out, _var("PAGERDUTY", "INTEGRATION_KEY"), cfg.get("integration-key", ""))
        }
        used.add("integration-key")
        ours = "pagerduty"
    elif kind == "ntfy":
        base = str(cfg.get("url", "https://ntfy.sh")).rstrip("/")
        config = {"url": f"{base}/{cfg.get('topic', '')}"}
        if cfg.get("token"):
            config["token"] = _secret(out, _var("NTFY", "TOKEN"), cfg["token"])
        used |= {"url", "topic", "token"}
        ours = "ntfy"
    elif kind == "custom":
        config = {"url": _secret(out, _var("CUSTOM", "URL"), cfg.get("url", ""))}
        used.add("url")
        ours = "webhook"
    else:
        out.drop(where, kind, "no channel of this kind")
        return None
    for setting in sorted(set(cfg) - used):
        out.drop(where, setting, "no equivalent")
    default = cfg.get("default-alert") or {}
    for setting in sorted(set(default) - {"enabled", "failure-threshold", "success-threshold"}):
        out.drop(where, f"default-alert.{setting}", "no per-alert equivalent")
    return {"kind": ours, "name": f"Gatus {kind}", "config": config}


def _clock(value: Any) -> tuple[int, int]:
    """``hh:mm``; unquoted ``23:00`` reaches us as YAML 1.1's base-60 integer 1380."""
    if isinstance(value, int) and not isinstance(value, bool):
        hour, minute = divmod(value, 60)
    else:
        hour, minute = (int(p) for p in str(value).split(":"))
    if not (0 <= hour < 24 and 0 <= minute < 60):
        raise ValueError(f"not a time of day: {value!r}")
    return hour, minute


def _maintenance(
    out: Imported,
    cfg: dict[str, Any],
    monitors: list[str],
    where: str = "maintenance",
    name: str = "Gatus maintenance",
) -> dict[str, Any] | None:
    if cfg.get("enabled") is False:
        out.drop(where, "enabled", "a disabled window is not carried over")
        return None
    try:
        hour, minute = _clock(cfg.get("start"))
        minutes = math.ceil(duration_seconds(cfg.get("duration", "")) / 60)
    except ValueError:
        out.drop(where, "start/duration", "not hh:mm and a duration: window not carried over")
        return None
    days = [_DAYS.get(str(d).lower()) for d in cfg.get("every") or []]
    if None in days:
        out.drop(where, "every", f"unknown day in {cfg.get('every')!r}: window not carried over")
        return None
    rrule = f"FREQ=WEEKLY;BYDAY={','.join(d for d in days if d)}" if days else "FREQ=DAILY"
    recurring = {
        "rrule": rrule,
        "starts_at": f"2026-01-01T{hour:02d}:{minute:02d}",
        "duration_minutes": max(1, minutes),
        "timezone": str(cfg.get("timezone") or "UTC"),
    }
    for setting in sorted(set(cfg) - {"enabled", "start", "duration", "timezone", "every"}):
        out.drop(where, setting, "no equivalent")
    return {"name": name, "recurring": recurring, "monitors": monitors}


def _external(
    out: Imported, ep: dict[str, Any], channels: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    where = f"external endpoint {ep.get('name')!r}"
    monitor: dict[str, Any] = {"name": str(ep["name"]), "type": "heartbeat"}
    interval = (ep.get("heartbeat") or {}).get("interval")
    monitor["interval_seconds"] = _interval(out, where, interval) if interval not in (None, 0, "0") else 3600
    if interval in (None, 0, "0"):
        out.drop(where, "heartbeat.interval", "none set (Gatus then never alerts on silence): 1 h used")
    if ep.get("group"):
        monitor["tags"] = [keyed(str(ep["group"]), set())]
    if ep.get("enabled") is False:
        monitor["paused"] = True
    out.drop(where, "token", "the pusher must call this monitor's ping URL instead of Gatus's push API")
    for setting in sorted(set(ep) - {"name", "group", "token", "heartbeat", "enabled", "alerts"}):
        out.drop(where, setting, "no equivalent")
    monitor["channels"] = []
    _alerts(out, where, ep.get("alerts"), channels, defaults, monitor)
    return monitor


_BARE_VAR = re.compile(r"(?<!\$)\$([A-Za-z_][A-Za-z0-9_]*)")


def read_config(path: Path) -> dict[str, Any]:
    """One file of a Gatus configuration (Gatus merges several): a mapping whose sections have
    the shapes its README documents. ``$VAR`` (Gatus expands both forms) is read as ``${VAR}``."""
    try:
        text = _BARE_VAR.sub(r"${\1}", path.read_text(encoding="utf-8"))
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise SourceError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SourceError(f"{path}: not a Gatus config.yaml (not a mapping of sections)")
    for section in ("endpoints", "external-endpoints"):
        items = data.get(section) or []
        if not isinstance(items, list) or not all(isinstance(e, dict) and e.get("name") for e in items):
            raise SourceError(f"{path}: {section} must be a list of mappings, each with a name")
    for section in ("alerting", "maintenance"):
        if not isinstance(data.get(section) or {}, dict):
            raise SourceError(f"{path}: {section} must be a mapping")
    return data


def merged(sources: list[Path]) -> dict[str, Any]:
    """The files as Gatus reads them together: endpoint lists joined, mappings merged."""
    whole: dict[str, Any] = {}
    for path in sources:
        for section, value in read_config(path).items():
            if isinstance(value, list) and isinstance(whole.get(section), list):
                whole[section] = whole[section] + value
            elif isinstance(value, dict) and isinstance(whole.get(section), dict):
                whole[section] = {**whole[section], **value}
            else:
                whole[section] = value
    if not (whole.get("endpoints") or whole.get("external-endpoints")):
        names = ", ".join(str(p) for p in sources)
        raise SourceError(f"{names}: not a Gatus config.yaml (no endpoints or external-endpoints)")
    return whole


def convert(sources: list[Path]) -> Imported:
    out = Imported()
    channels: dict[str, Any] = {}
    monitors: dict[str, Any] = {}
    windows: dict[str, Any] = {}
    taken: set[str] = set()
    data = merged(sources)
    defaults: dict[str, Any] = {}
    for kind, cfg in (data.get("alerting") or {}).items():
        cfg = cfg if isinstance(cfg, dict) else {}
        defaults[kind] = cfg.get("default-alert") or {}
        channel = _channel(out, str(kind), cfg)
        if channel is not None:
            channels[str(kind)] = channel
    for ep in data.get("endpoints") or []:
        key = keyed(f"{ep.get('group')}-{ep['name']}" if ep.get("group") else str(ep["name"]), taken)
        monitor = _endpoint(out, ep, channels, defaults, key)
        if monitor is not None:
            monitors[key] = monitor
            for n, cfg in enumerate(ep.get("maintenance-windows") or [], start=1):
                where = f"endpoint {ep['name']!r}: maintenance-windows[{n - 1}]"
                name = f"Gatus maintenance of {ep['name']}" + (f" ({n})" if n > 1 else "")
                window = _maintenance(out, cfg if isinstance(cfg, dict) else {}, [key], where, name[:100])
                if window is not None:
                    windows[keyed(f"{key}-maintenance", taken)] = window
    for ep in data.get("external-endpoints") or []:
        key = keyed(f"{ep.get('group')}-{ep['name']}" if ep.get("group") else str(ep["name"]), taken)
        monitors[key] = _external(out, ep, channels, defaults)
    for section in sorted(set(data) - {"endpoints", "external-endpoints", "alerting", "maintenance"}):
        out.drop("config", section, "Gatus's own setting; no equivalent")
    if data.get("maintenance"):
        others = [k for k, m in monitors.items() if m["type"] != "heartbeat"]
        window = _maintenance(out, data["maintenance"], others)
        if window is not None:
            windows["gatus-maintenance"] = window
    if channels:
        out.document["channels"] = channels
    if monitors:
        out.document["monitors"] = monitors
    if windows:
        out.document["maintenance"] = windows
    return out
