"""Uptime Kuma's notifications as our channels (``kuma.py`` reads the database).

A Kuma notification is a row whose ``config`` is the JSON of its form: a ``type`` naming the
provider (``server/notification-providers/*.js``: ``telegram``, ``smtp``, ``webhook``,
``slack``, ``discord``, ``ntfy``, ``PagerDuty``...) and the provider's fields under its own
names (``slackwebhookURL``, ``smtpHost``...). The providers we have a channel kind for become
channels, their URLs, tokens and passwords ``${KUMA_NOTIFICATION_<id>_...}`` references; each
field not carried over, and every other provider, is a report line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from email.utils import getaddresses, parseaddr
from typing import Any

from monitor.ascode.importers import Imported, keyed
from monitor.ascode.importers.kuma_db import Db, integer, parsed, variable

# The form's own fields, not the provider's settings.
META = {"name", "type", "isDefault", "applyExisting", "active", "id", "userId", "userID"}
# Values Kuma's forms (src/components/notifications/*.vue) fill in by themselves: not reported.
FORM_DEFAULTS: dict[str, Any] = {
    "telegramServerUrl": "https://api.telegram.org",
    "discordMessageFormat": "normal",
    "slackIncludeGroupName": True,
}
PAGERDUTY_SEVERITIES = ("critical", "error", "warning", "info")
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


def channels(out: Imported, db: Db) -> dict[int, str]:
    """The channels section; answers each notification id's key (for the monitors' links)."""
    taken: set[str] = set()
    section: dict[str, Any] = {}
    key_of: dict[int, str] = {}
    for row in db.rows("notification"):
        name = str(row.get("name") or f"notification {row['id']}")
        where = f"notification '{name}' (id {row['id']})"
        config = parsed(row.get("config"), None)
        if not isinstance(config, dict):
            out.drop(where, "config", "not a JSON object: left out")
            continue
        kind = str(config.get("type") or "")
        convert = PROVIDERS.get(kind)
        if convert is None:
            out.drop(where, "type", f"{kind or 'no'} notifications have no channel kind here")
            continue
        used: set[str] = set()
        made = convert(out, Fields(config, used), where, variable("NOTIFICATION", row["id"]))
        if made is None:
            out.drop(where, "type", f"{kind}: left out (see the lines above)")
            continue
        our_kind, settings = made
        for field, value in sorted(config.items()):
            ignored = field in used or field in META or FORM_DEFAULTS.get(field, None) == value
            if not ignored and value not in (None, "", False, [], {}):
                out.drop(where, field, "not carried over (no setting of ours matches it)")
        if row.get("is_default") or config.get("isDefault"):
            out.drop(where, "is_default", "no default channels here: list it in each monitor's channels")
        if row.get("active") in (0, False):
            out.drop(where, "active", "it was turned off in Kuma; here it is on")
        key = keyed(name, taken)
        section[key] = {"kind": our_kind, "name": name, "config": settings}
        key_of[row["id"]] = key
    if section:
        out.document["channels"] = section
    return key_of


class Fields:
    """A notification's config, remembering which fields were read (the rest is reported)."""

    def __init__(self, config: dict[str, Any], used: set[str]) -> None:
        self.config, self.used = config, used

    def get(self, name: str) -> Any:
        self.used.add(name)
        value = self.config.get(name)
        return value.strip() if isinstance(value, str) else value

    def text(self, name: str) -> str:
        value = self.get(name)
        return "" if value is None else str(value)


Made = tuple[str, dict[str, Any]] | None


def _telegram(out: Imported, f: Fields, where: str, var: str) -> Made:
    chat = f.text("telegramChatID")
    if f.get("telegramBotToken"):
        out.drop(where, "telegramBotToken", "the bot here is the server's (MONITOR_TELEGRAM_BOT_TOKEN): "
                 "add that bot to the chat")  # fmt: skip
    if not chat:
        out.drop(where, "telegramChatID", "no chat id")
        return None
    return "telegram", {"chat_id": chat}


def _smtp(out: Imported, f: Fields, where: str, var: str) -> Made:
    host, sender = f.text("smtpHost"), parseaddr(f.text("smtpFrom"))[1]
    to = [a for _, a in getaddresses([f.text("smtpTo")]) if a]
    if not host or not sender or not to:
        out.drop(where, "smtpHost", "an email channel needs smtpHost, smtpFrom and smtpTo")
        return None
    if f.get("smtpSecure"):
        security = "tls"
    elif f.get("smtpIgnoreSTARTTLS"):
        security = "none"
    else:
        security = "starttls"
    config: dict[str, Any] = {"host": host, "from_address": sender, "to": to[:20], "security": security}
    port = integer(f.get("smtpPort"))
    if port:
        config["port"] = port
    if f.text("smtpUsername"):
        config["username"] = f.text("smtpUsername")
    if f.text("smtpPassword"):
        config["password"] = out.secret(var + "_PASSWORD", f.text("smtpPassword"))
    for field in ("smtpCC", "smtpBCC"):
        if f.get(field):
            out.drop(where, field, "no copies here: add the addresses to the channel's to")
    return "email", config


def _webhook(out: Imported, f: Fields, where: str, var: str) -> Made:
    url = f.text("webhookURL")
    if not url:
        out.drop(where, "webhookURL", "no URL")
        return None
    config: dict[str, Any] = {"url": out.secret(var + "_URL", url)}
    if f.text("httpMethod").lower() not in ("", "post"):
        out.drop(where, "httpMethod", f"{f.text('httpMethod')!r}: our webhooks POST")
    content = f.text("webhookContentType") or "json"
    if content != "json":
        out.drop(where, "webhookContentType", f"{content!r}: our webhooks send our own JSON (docs/channels)")
    headers = parsed(f.get("webhookAdditionalHeaders"), None)
    if isinstance(headers, dict) and headers:
        config["headers"] = {
            str(k): out.secret(var + "_HEADER_" + variable(k)[5:], str(v)) for k, v in headers.items()
        }
    elif f.config.get("webhookAdditionalHeaders"):
        out.drop(where, "webhookAdditionalHeaders", "not a JSON object of name: value")
    return "webhook", config


def _slack(out: Imported, f: Fields, where: str, var: str) -> Made:
    url = f.text("slackwebhookURL")
    if not url:
        out.drop(where, "slackwebhookURL", "no webhook URL")
        return None
    return "slack", {"url": out.secret(var + "_URL", url)}


def _discord(out: Imported, f: Fields, where: str, var: str) -> Made:
    url = f.text("discordWebhookUrl")
    if not url:
        out.drop(where, "discordWebhookUrl", "no webhook URL")
        return None
    config: dict[str, Any] = {"url": out.secret(var + "_URL", url)}
    if f.text("discordUsername"):
        config["username"] = f.text("discordUsername")[:80]
    if f.text("discordChannelType") not in ("", "channel"):
        out.drop(
            where, "discordChannelType", "posts go to the webhook's channel here, not to threads or forums"
        )
    return "discord", config


def _ntfy(out: Imported, f: Fields, where: str, var: str) -> Made:
    server, topic = f.text("ntfyserverurl").rstrip("/"), f.text("ntfytopic")
    if not server or not topic:
        out.drop(where, "ntfytopic", "an ntfy channel needs ntfyserverurl and ntfytopic")
        return None
    config: dict[str, Any] = {"url": out.secret(var + "_URL", f"{server}/{topic}")}
    method = f.text("ntfyAuthenticationMethod") or "none"
    if method == "accessToken" and f.text("ntfyaccesstoken"):
        config["token"] = out.secret(var + "_TOKEN", f.text("ntfyaccesstoken"))
    elif method == "usernamePassword" or f.config.get("ntfyusername"):
        f.used.update(("ntfyusername", "ntfypassword"))
        out.drop(where, "ntfyusername", "user and password are not supported here: make an access token")
    up = integer(f.get("ntfyPriority"))
    down = integer(f.get("ntfyPriorityDown"))
    if up and 1 <= up <= 5:
        config["priority_up"] = up
        config["priority_down"] = down if down and up <= down <= 5 else min(up + 1, 5)
    return "ntfy", config


def _pagerduty(out: Imported, f: Fields, where: str, var: str) -> Made:
    key = f.text("pagerdutyIntegrationKey")
    if not key:
        out.drop(where, "pagerdutyIntegrationKey", "no integration key")
        return None
    config: dict[str, Any] = {"routing_key": out.secret(var + "_ROUTING_KEY", key)}
    if not re.fullmatch(r"[A-Za-z0-9]{32}", key):
        out.drop(where, "pagerdutyIntegrationKey", "not a 32-character Events API v2 key, as ours must be")
    url = f.text("pagerdutyIntegrationUrl")
    if url and url != PAGERDUTY_URL:
        config["url"] = url
    severity = f.text("pagerdutyPriority")
    if severity in PAGERDUTY_SEVERITIES:
        config["severity"] = severity
    elif severity:
        out.drop(where, "pagerdutyPriority", f"{severity!r} is not a PagerDuty severity here")
    resolve = f.text("pagerdutyAutoResolve")
    if resolve not in ("", "resolve"):
        out.drop(where, "pagerdutyAutoResolve", f"{resolve!r}: incidents here are resolved when up again")
    return "pagerduty", config


PROVIDERS: dict[str, Callable[[Imported, Fields, str, str], Made]] = {
    "telegram": _telegram,
    "smtp": _smtp,
    "webhook": _webhook,
    "slack": _slack,
    "discord": _discord,
    "ntfy": _ntfy,
    "PagerDuty": _pagerduty,
}
